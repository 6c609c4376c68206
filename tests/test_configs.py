"""Configs: subclass overrides by plain class attributes build a model of the subclass's size,
keyword overrides and dataclasses.replace keep working, unknown fields and bad values raise."""

import dataclasses
import pickle

import pytest

from tricycle.configs import CONFIGS, CPUConfig, DebugConfig, GPTConfig, get_config
from tricycle.models import GPT


class SmallConfig(GPTConfig):  # the original tricycle's way: no decorator, no annotations
    embedding_dim = 32
    n_heads = 4
    n_layers = 1
    context_window = 16
    vocab_size = 50


def test_a_subclass_builds_a_model_of_its_own_size():
    config = SmallConfig()
    assert (config.embedding_dim, config.n_heads, config.n_layers) == (32, 4, 1)
    model = GPT(config)
    assert model.token_embedding.weights.shape == (50, 32)
    assert len(model.blocks) == 1
    expected = GPT(
        GPTConfig(embedding_dim=32, n_heads=4, n_layers=1, context_window=16, vocab_size=50)
    )
    assert model.num_parameters() == expected.num_parameters()


def test_subclass_of_a_named_config_and_new_annotated_fields():
    class Longer(DebugConfig):
        steps = 7
        n_experts: int = 4  # annotated: a new field

    config = Longer()
    assert config.steps == 7 and config.n_experts == 4
    assert config.embedding_dim == DebugConfig().embedding_dim  # the rest is inherited
    assert Longer(n_experts=2).n_experts == 2
    assert "n_experts" in Longer().to_dict()


def test_keyword_overrides_replace_and_pickle_keep_working():
    config = SmallConfig(n_layers=3)
    assert config.n_layers == 3 and config.embedding_dim == 32
    replaced = dataclasses.replace(config, embedding_dim=64)
    assert type(replaced) is SmallConfig and replaced.embedding_dim == 64
    assert pickle.loads(pickle.dumps(config)) == config
    assert GPTConfig.from_dict(config.to_dict()).embedding_dim == 32
    assert get_config("cpu", steps=3).steps == 3
    for name, config_class in CONFIGS.items():  # each named config is its class
        assert isinstance(get_config(name), config_class)
    assert CPUConfig().embedding_dim == 128


def test_an_unknown_class_attribute_raises_naming_it():
    with pytest.raises(TypeError, match=r"Typo: embeding_dim = 128 is not a field of GPTConfig"):

        class Typo(GPTConfig):
            embeding_dim = 128


def test_methods_properties_and_constants_are_not_fields():
    class WithExtras(DebugConfig):
        NAME = "extras"

        @property
        def width(self):
            return self.embedding_dim * 2

        def describe(self):
            return f"{self.NAME}: {self.width}"

    assert WithExtras().describe() == f"extras: {2 * DebugConfig().embedding_dim}"


def test_unknown_keyword_and_attribute_raise():
    with pytest.raises(TypeError, match="embeding_dim"):
        GPTConfig(embeding_dim=128)
    config = GPTConfig()
    with pytest.raises(AttributeError, match=r"GPTConfig has no field 'embeding_dim'"):
        config.embeding_dim = 128
    config.steps = 10  # known fields can still be set
    assert config.steps == 10


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"embedding_dim": 10, "n_heads": 3}, r"embedding_dim=10 is not divisible by n_heads=3"),
        ({"arch": "llama", "n_heads": 6, "n_kv_heads": 4}, r"n_heads=6 must be a multiple of"),
        ({"arch": "llama", "embedding_dim": 24, "n_heads": 8}, r"RoPE needs an even head size"),
    ],
)
def test_fields_that_do_not_fit_together_raise(overrides, message):
    """(Each field's own values are checked in tests/test_checks.py.)"""
    with pytest.raises(ValueError, match=f"GPTConfig: {message}"):
        GPTConfig(**overrides)


def test_a_subclass_with_a_bad_value_raises_when_made():
    class Wrong(GPTConfig):
        embedding_dim = 128  # 6 heads by default: not divisible

    with pytest.raises(ValueError, match=r"Wrong: embedding_dim=128 is not divisible by n_heads=6"):
        Wrong()

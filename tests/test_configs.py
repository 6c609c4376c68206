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
    for name, config_class in CONFIGS.items():  # the decorated named configs are unchanged
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
    ("overrides", "error", "message"),
    [
        ({"embedding_dim": 0}, ValueError, r"embedding_dim must be positive, got 0"),
        ({"embedding_dim": 2.5}, TypeError, r"embedding_dim must be an integer, got 2.5"),
        ({"n_layers": "6"}, TypeError, r"n_layers must be an integer, got '6'"),
        ({"vocab_size": -3}, ValueError, r"vocab_size must be positive"),
        ({"batch_size": 0}, ValueError, r"batch_size must be positive"),
        ({"gradient_accumulation_steps": 0}, ValueError, r"gradient_accumulation_steps must be"),
        ({"steps": -5}, ValueError, r"steps must be positive, got -5"),
        ({"eval_interval": 0}, ValueError, r"eval_interval must be positive"),
        ({"warmup_steps": -1}, ValueError, r"warmup_steps must be >= 0, got -1"),
        ({"dropout": 1.0}, ValueError, r"dropout must be in \[0, 1\), got 1.0"),
        ({"dropout": float("nan")}, ValueError, r"dropout must be in \[0, 1\), got nan"),
        ({"max_learning_rate": float("inf")}, ValueError, r"max_learning_rate must be in \[0, inf"),
        ({"min_learning_rate": -1e-4}, ValueError, r"min_learning_rate must be in \[0"),
        ({"weight_decay": -0.1}, ValueError, r"weight_decay must be in \[0, inf\), got -0.1"),
        ({"beta1": 1.0}, ValueError, r"beta1 must be in \[0, 1\), got 1.0"),
        ({"beta2": -0.5}, ValueError, r"beta2 must be in \[0, 1\)"),
        ({"eps": 0.0}, ValueError, r"eps must be in \(0, inf\), got 0.0"),
        ({"grad_clip": float("nan")}, ValueError, r"grad_clip must be in \[0, inf\), got nan"),
        ({"expansion_ratio": 0}, ValueError, r"expansion_ratio must be in \(0, inf\)"),
        ({"expansion_ratio": "4"}, TypeError, r"expansion_ratio must be a number"),
        ({"bias": "yes"}, TypeError, r"bias must be True or False, got 'yes'"),
        ({"tie_weights": 1}, TypeError, r"tie_weights must be True or False"),
        ({"device": "tpu"}, ValueError, r"GPTConfig: unknown device 'tpu'"),
        ({"eval_protocol": "sometimes"}, ValueError, r"eval_protocol must be"),
        ({"embedding_dim": 10, "n_heads": 3}, ValueError, r"not divisible by n_heads=3"),
    ],
)
def test_bad_values_raise_naming_the_field(overrides, error, message):
    with pytest.raises(error, match=message):
        GPTConfig(**overrides)


def test_a_subclass_with_a_bad_value_raises_when_made():
    class Wrong(GPTConfig):
        embedding_dim = 128  # 6 heads by default: not divisible

    with pytest.raises(ValueError, match=r"Wrong: embedding_dim=128 is not divisible by n_heads=6"):
        Wrong()

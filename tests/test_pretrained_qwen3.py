"""Qwen3 (tricycle.hf_configs, tricycle.pretrained, LlamaAttention's ``qk_norm`` and
``head_dim``): an RMSNorm on each query and key head before RoPE, no q/k/v biases unless
attention_bias, and a head size apart from hidden_size / num_attention_heads (Llama's and
Mistral's configs may give one too). Tiny random models made by transformers load with its
logits, its greedy tokens and its gradients, and tricycle's exports load back into
transformers as Qwen3 with the same logits; the new layer code against finite differences.
transformers and torch are the oracles; no network."""

import json

import numpy as np
import pytest

from tests.helpers import as_float64, check_grads, randn
from tricycle import backend, hf_configs
from tricycle.configs import GPTConfig
from tricycle.loss import CrossEntropy
from tricycle.models import GPT, Llama
from tricycle.pretrained import PretrainedError, write
from tricycle.self_attention import LlamaAttention
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
from test_pretrained_families import (  # noqa: E402 - the families' models and comparisons
    VOCAB,
    WINDOW,
    close,
    family,
    ids,
    their_logits,
)

E, HEADS = 48, 4  # E / HEADS = 12: every head size below differs


def qwen3(**overrides):
    """A random transformers Qwen3, its q_norm and k_norm gains drawn (``family``)."""
    return family("qwen3", **{**dict(hidden_size=E, head_dim=16, tie_word_embeddings=False),
                              **overrides})  # fmt: skip


QWEN3 = {  # name: (the overrides, tricycle's head_dim and attention_bias)
    "untied-32": (dict(head_dim=32), 32, "none"),  # a head size the GPU's kernels take
    "tied-bias-16": (dict(tie_word_embeddings=True, attention_bias=True), 16, "all"),
}


@pytest.fixture(scope="module", params=list(QWEN3))
def saved(request, tmp_path_factory):
    """(their model, the directory it was saved to, (head_dim, attention_bias))."""
    overrides, head_dim, bias = QWEN3[request.param]
    model = qwen3(**overrides)
    directory = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(directory)
    return model, directory, (head_dim, bias)


# ====================================================================== in and out


def test_their_qwen3_loads_with_equal_logits_and_greedy_tokens(saved):
    model, directory, (head_dim, bias) = saved
    ours = GPT.from_pretrained(directory)
    assert type(ours) is Llama and ours.config.qk_norm
    assert (ours.config.head_dim, ours.config.attention_bias) == (head_dim, bias)
    attention = ours.blocks[0].attention
    assert attention.head_dim == head_dim and attention.q_norm.gamma.shape == (head_dim,)
    assert attention.out_projection.weights.shape == (HEADS * head_dim, E)
    tokens = ids()
    close(ours(tokens).array, their_logits(model, tokens))

    prompt = ids(1, 5, seed=3)
    with torch.no_grad():
        expected = model.generate(
            torch.tensor(prompt), max_new_tokens=40, min_new_tokens=40, do_sample=False,
            attention_mask=torch.ones_like(torch.tensor(prompt)),
        ).numpy()  # fmt: skip
    np.testing.assert_array_equal(ours.generate(prompt, 40, temperature=0), expected)


def test_our_export_loads_back_in_transformers_as_qwen3_with_equal_logits(saved, tmp_path):
    model, directory, _ = saved
    ours = GPT.from_pretrained(directory)
    ours.save_pretrained(tmp_path / "export")
    written = json.loads((tmp_path / "export" / "config.json").read_text())
    assert (written["model_type"], written["head_dim"]) == ("qwen3", ours.config.head_dim)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export").eval()
    assert type(back) is transformers.Qwen3ForCausalLM
    tokens = ids(seed=5)
    close(their_logits(back, tokens), ours(tokens).array)
    again = GPT.from_pretrained(tmp_path / "export")  # and through tricycle: exactly
    assert again.config == ours.config
    for (name, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_gradients_of_the_head_norms_and_projections_equal_torch(tmp_path):
    """A Qwen3's loss and its gradients (q_norm and k_norm, the q|k|v projection stacked as
    tricycle stacks it, the output projection of H * head_dim inputs) are torch's."""
    model = qwen3(head_dim=16)
    model.save_pretrained(tmp_path)
    tokens = ids(2, 12, seed=9)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    logits = model(torch.tensor(inputs)).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                             torch.tensor(targets).reshape(-1))  # fmt: skip
    loss.backward()

    ours = GPT.from_pretrained(tmp_path)
    our_loss = CrossEntropy()(targets, ours(inputs))
    our_loss.backward()
    np.testing.assert_allclose(float(our_loss.array), loss.item(), rtol=1e-5)
    for i, block in enumerate(ours.blocks):
        theirs, attention = model.model.layers[i].self_attn, block.attention
        for norm in ("q_norm", "k_norm"):
            expected = getattr(theirs, norm).weight.grad.numpy()
            got = _grad(getattr(attention, norm).gamma)
            assert np.abs(expected).max() > 1e-3  # a gradient that can tell right from wrong
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6, err_msg=norm)
        qkv = torch.cat([getattr(theirs, f"{x}_proj").weight.grad for x in "qkv"]).T.numpy()
        np.testing.assert_allclose(_grad(attention.qkv_projection.weights), qkv, rtol=1e-4,
                                   atol=1e-6)  # fmt: skip
        np.testing.assert_allclose(_grad(attention.out_projection.weights),
                                   theirs.o_proj.weight.grad.T.numpy(), rtol=1e-4, atol=1e-6)


def _grad(tensor) -> np.ndarray:
    return np.asarray(getattr(tensor.grad, "array", tensor.grad))


@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_a_llama_with_its_own_head_size_loads_and_exports(kind, tmp_path):
    """LlamaConfig and MistralConfig take a head_dim too: 24 here, where E / heads is 12."""
    torch.manual_seed(0)
    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
    }[kind]
    model = model_class(config_class(
        vocab_size=VOCAB, hidden_size=E, intermediate_size=80, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=2, head_dim=24, rope_theta=500.0,
        max_position_embeddings=WINDOW, initializer_range=0.3, sliding_window=None,
    )).eval()  # fmt: skip
    model.save_pretrained(tmp_path / "theirs")
    ours = GPT.from_pretrained(tmp_path / "theirs")
    assert (ours.config.head_dim, ours.config.qk_norm) == (24, False)
    tokens = ids(2, 20, seed=7)
    close(ours(tokens).array, their_logits(model, tokens))
    ours.save_pretrained(tmp_path / "ours")
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "ours").eval()
    assert type(back) is model_class
    close(their_logits(back, tokens), ours(tokens).array)


# ====================================================================== the layer


def test_head_norms_and_head_size_match_finite_differences():
    """LlamaAttention with qk_norm and a head size of 6 (E / heads = 4): the gradients of x,
    of both gains and of the projections, in float64."""
    np.random.seed(0)
    layer = as_float64(LlamaAttention(8, 2, 1, 5, 50.0, head_dim=6, qk_norm=True, norm_eps=1e-5))
    layer.q_norm.gamma.array = randn(6, seed=1) + 1
    layer.k_norm.gamma.array = randn(6, seed=2) + 1

    def attention(x, q_gain, k_gain, qkv_weights, out_weights):
        layer.q_norm.gamma, layer.k_norm.gamma = q_gain, k_gain
        layer.qkv_projection.weights, layer.out_projection.weights = qkv_weights, out_weights
        return layer(x)

    arrays = [randn(2, 4, 8, seed=3), layer.q_norm.gamma.array, layer.k_norm.gamma.array,
              layer.qkv_projection.weights.array, layer.out_projection.weights.array]
    assert layer.qkv_projection.weights.shape == (8, (2 + 2 * 1) * 6)
    check_grads(attention, *arrays, rtol=1e-5, atol=1e-7)


def test_the_ordinary_path_gains_no_op():
    """Without qk_norm the projection goes straight into RoPE (no split, norm or join), and
    the layer holds no gains; with it, each head is normalised before the rotation."""
    np.random.seed(0)
    x = Tensor(randn(1, 3, 8).astype(np.float32))
    plain = LlamaAttention(8, 2, 1, 5)
    projected = plain.qkv_projection(x)
    rotated = plain.rotate(projected, None)
    assert rotated.name == "rope_qkv" and len(rotated.args) == 1 and rotated.args[0] is projected
    assert [name for name, _ in plain.named_parameters()] == [
        "qkv_projection.weights", "out_projection.weights"]  # fmt: skip
    normed = LlamaAttention(8, 2, 1, 5, qk_norm=True)
    ops, seen = set(), [normed.rotate(normed.qkv_projection(x), None)]
    while seen:
        node = seen.pop()
        ops.add(node.name)
        seen.extend(a for a in node.args or () if a is not x)
    assert {"rms_norm", "concatenate", "rope_qkv"} <= ops


def test_kv_cache_generation_matches_the_full_forward():
    config = GPTConfig(arch="llama", embedding_dim=20, n_heads=4, n_kv_heads=2, head_dim=8,
                       qk_norm=True, n_layers=2, vocab_size=30, context_window=16)  # fmt: skip
    np.random.seed(0)
    model = Llama(config)
    tokens = ids(2, 11) % 30
    full = model(tokens).array
    caches = model.new_caches(2)
    assert caches[0].keys.shape == (2, 4, 16, 8)
    parts = [model(tokens[:, a:b], caches).array for a, b in [(0, 5), (5, 6), (6, 11)]]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-4, atol=1e-5)


# ====================================================================== configs


def test_the_new_config_fields_default_off_and_round_trip():
    old = GPTConfig(arch="llama").to_dict()
    for field in ("head_dim", "qk_norm"):
        del old[field]  # a config saved before the fields existed
    assert GPTConfig.from_dict(old) == GPTConfig(arch="llama")
    assert (GPTConfig().head_dim, GPTConfig().qk_norm, GPTConfig().head_size) == (None, False, 64)
    config = GPTConfig(arch="llama", embedding_dim=50, n_heads=4, head_dim=16, qk_norm=True)
    assert config.head_size == 16  # 50 is not a multiple of 4: the head size is given
    assert GPTConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    for field, value in [("head_dim", 16), ("qk_norm", True)]:
        with pytest.raises(ValueError, match=r"and so are head_dim and qk_norm .*"
                           f"{field}={value}"):  # fmt: skip
            GPTConfig(**{field: value})
    with pytest.raises(ValueError, match="even head size, got 7"):
        GPTConfig(arch="llama", head_dim=7)
    with pytest.raises(ValueError, match="not divisible by n_heads=4 .*head_dim instead"):
        GPTConfig(arch="llama", embedding_dim=50, n_heads=4)


def test_qwen3_configs_read_as_transformers_reads_them(tmp_path):
    """No head_dim in a Qwen3's config.json is Qwen3Config's 128; one equal to E / heads is
    no head_dim (as every older config); a Qwen3's sliding window is Qwen2's."""
    qwen3().config.save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    good = json.loads(path.read_text())
    for change, head_dim in [({}, 16), ({"head_dim": None}, 128), ({"head_dim": 12}, None)]:
        values = {k: v for k, v in {**good, **change}.items() if v is not None}
        path.write_text(json.dumps(values))
        config = hf_configs.read_config(tmp_path)
        assert (config.head_dim, config.qk_norm, config.attention_bias) == (head_dim, True, "none")
    path.write_text(json.dumps({**good, "use_sliding_window": True, "sliding_window": 16,
                                "layer_types": None, "max_window_layers": 1}))  # fmt: skip
    with pytest.raises(PretrainedError, match="sliding_window=16 is shorter"):
        hf_configs.read_config(tmp_path)


def test_a_model_type_is_written_only_where_it_holds_the_model(tmp_path):
    base = dict(arch="llama", embedding_dim=32, n_heads=4, n_layers=1, vocab_size=50,
                context_window=16, head_dim=4)  # fmt: skip
    for qk_norm, bias, kind, written in [(True, "none", None, "qwen3"), (True, "all", None,
                                         "qwen3"), (False, "none", "qwen3", None)]:  # fmt: skip
        config = GPTConfig(**base, qk_norm=qk_norm, attention_bias=bias)
        if written is None:
            with pytest.raises(PretrainedError, match="qk_norm=False, with attention_bias='none' "
                               "cannot be written as model_type 'qwen3'"):  # fmt: skip
                write(tmp_path / "no", config, Llama(config).state_dict(), kind=kind)
            continue
        write(tmp_path / "ok", config, Llama(config).state_dict(), kind=kind)
        assert hf_configs.model_type(tmp_path / "ok") == written
        back = hf_configs.read_config(tmp_path / "ok")
        assert (back.head_dim, back.qk_norm, back.attention_bias) == (4, qk_norm, bias)
    for bias, kind in [("qkv", None), ("none", "llama"), ("none", "qwen2"), ("none", "mistral")]:
        config = GPTConfig(**base, qk_norm=True, attention_bias=bias)
        with pytest.raises(PretrainedError, match=f"qk_norm=True, with attention_bias='{bias}' "
                           f"cannot be written as model_type '{kind or 'qwen3'}'"):  # fmt: skip
            write(tmp_path / "no", config, Llama(config).state_dict(), kind=kind)
    assert not (tmp_path / "no").exists()


def test_the_training_command_sets_both_fields():
    from tricycle.apps import train as train_cli
    from tricycle.apps.pretrained import fine_tuning_config
    from tricycle.configs import CPUConfig

    args = train_cli.parse_args(["--arch", "llama", "--head-dim", "48", "--qk-norm", "true"])
    config = train_cli.build_config(args)
    assert (config.head_dim, config.qk_norm, config.head_size) == (48, True, 48)
    pretrained = GPTConfig(arch="llama", embedding_dim=32, n_heads=4, head_dim=16, qk_norm=True)
    tuned = fine_tuning_config(CPUConfig(), pretrained, {})
    assert (tuned.head_dim, tuned.qk_norm) == (16, True)


# ====================================================================== on a GPU


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_kv_cache_generation_on_a_gpu(saved, cp):
    """The GPU's decode steps (a recorded graph, positions counted on the device) normalise
    the heads and use the head size as the CPU does; the fused attention kernels take the
    head size of 32, the reference the one of 16."""
    _, directory, _ = saved
    model = GPT.from_pretrained(directory)
    prompt = ids(3, 5, seed=4)
    expected = model.generate(prompt, 40, temperature=0)
    cpu_logits = model(prompt).array
    model.to_gpu()
    np.testing.assert_array_equal(model.generate(prompt, 40, temperature=0), expected)
    close(backend.to_host_array(model(cp.asarray(prompt)).array), cpu_logits)

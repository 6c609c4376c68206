"""The Llama-style transformer: RoPE and grouped-query heads (``rope_qkv``), SwiGLU, the
block and the whole model against finite differences and a PyTorch twin written out by hand
(tests/torch_llama.py); the KV cache, checkpoints, pickling, precision, configs.
Initialisation and cached generation are tested with the GPT's, in tests/test_gpt.py."""

import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads, same_on_host_and
from tricycle.activation import SwiGLU
from tricycle.apps.checkpoint import save_pickle
from tricycle.attention import rope_qkv, rope_tables, rotary_embedding
from tricycle.blocks import LlamaAttention, LlamaTransformerBlock, llama_hidden_size
from tricycle.configs import DebugConfig, GPTConfig, get_config
from tricycle.loss import CrossEntropy
from tricycle.models import GPT, Llama, build_model
from tricycle.precision import Precision
from tricycle.tensor import Tensor, no_grad, to_tensor
from tricycle.tokeniser import CharTokeniser

SMALL = DebugConfig(
    embedding_dim=32, context_window=16, vocab_size=50, n_heads=4, n_layers=2, arch="llama",
    n_kv_heads=2, ffn_multiple_of=16,
)  # fmt: skip


def randn(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def tokens(batch, length, vocab=SMALL.vocab_size, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, size=(batch, length))


def make_llama(config=SMALL, seed=0) -> Llama:
    np.random.seed(seed)
    return build_model(config)


# ====================================================================== RoPE and GQA


@given(
    B=st.integers(1, 2),
    T=st.integers(1, 4),
    kv_heads=st.integers(1, 2),
    group=st.integers(1, 3),
    half=st.integers(1, 3),
    start=st.integers(0, 5),
)
def test_rope_qkv_gradient_matches_finite_differences(B, T, kv_heads, group, half, start):
    H, D = kv_heads * group, 2 * half
    cos, sin = rope_tables(np, start, T, D, 10000.0, np.float64)
    check_grads(
        lambda qkv: rope_qkv(qkv, cos, sin, H, kv_heads), randn(B, T, (H + 2 * kv_heads) * D)
    )


@given(T=st.integers(1, 4), heads=st.integers(1, 3), half=st.integers(1, 3))
def test_rotary_embedding_gradient_matches_finite_differences(T, heads, half):
    cos, sin = rope_tables(np, 2, T, 2 * half, 100.0, np.float64)
    x = randn(2, T, heads, 2 * half)
    check_grads(lambda x: rotary_embedding(x, cos, sin) * x, x)  # a diamond: x used twice


def test_rope_is_a_rotation_that_depends_on_relative_position():
    D = 8
    q, k = randn(1, 1, 1, D, seed=1), randn(1, 1, 1, D, seed=2)

    def score(p_q, p_k):
        rq = rotary_embedding(Tensor(q), *rope_tables(np, p_q, 1, D, 10000.0, np.float64))
        rk = rotary_embedding(Tensor(k), *rope_tables(np, p_k, 1, D, 10000.0, np.float64))
        return float((rq.array * rk.array).sum())

    cos, sin = rope_tables(np, 7, 1, D, 10000.0, np.float64)
    rotated = rotary_embedding(Tensor(q), cos, sin).array
    assert np.linalg.norm(rotated) == pytest.approx(np.linalg.norm(q))  # lengths kept
    assert score(3, 1) == pytest.approx(score(10, 8))  # only the offset matters
    assert score(0, 0) == pytest.approx(float((q * k).sum()))
    assert score(3, 1) != pytest.approx(score(3, 2))


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 4), (4, 2), (6, 1)])
def test_rope_and_grouped_heads_match_pytorch(n_heads, n_kv_heads):
    twin = pytest.importorskip("torch_llama")
    torch = twin.torch
    B, T, D, start = 2, 5, 6, 3
    x = randn(B, T, (n_heads + 2 * n_kv_heads) * D)
    dout = randn(B, T, 3 * n_heads * D, seed=1)

    tx = torch.tensor(x, requires_grad=True)
    q, k, v = tx.split([n_heads * D, n_kv_heads * D, n_kv_heads * D], dim=-1)
    q = q.view(B, T, n_heads, D).transpose(1, 2)
    k, v = (t.view(B, T, n_kv_heads, D).transpose(1, 2) for t in (k, v))
    cos, sin = twin.rope_tables(T, D, 500.0, start)
    q, k = twin.rotate(q, cos, sin), twin.rotate(k, cos, sin)
    k, v = (t.repeat_interleave(n_heads // n_kv_heads, dim=1) for t in (k, v))
    expected = torch.cat([t.transpose(1, 2).reshape(B, T, -1) for t in (q, k, v)], dim=-1)
    expected.backward(torch.tensor(dout))

    X = Tensor(x)
    out = rope_qkv(X, *rope_tables(np, start, T, D, 500.0, np.float64), n_heads, n_kv_heads)
    out.backward(dout)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_rope_errors():
    cos, sin = rope_tables(np, 0, 3, 4, 10000.0, np.float32)
    with pytest.raises(ValueError, match="multiple of n_kv_heads=3"):
        rope_qkv(to_tensor(randn(1, 3, 40)), cos, sin, 4, 3)
    with pytest.raises(ValueError, match=r"\(B, T, 8 D\)"):
        rope_qkv(to_tensor(randn(1, 3, 30)), cos, sin, 4, 2)
    with pytest.raises(ValueError, match="even"):
        rope_tables(np, 0, 3, 5, 10000.0, np.float32)
    with pytest.raises(ValueError, match="even head size"):
        LlamaAttention(embedding_dim=12, n_heads=4, n_kv_heads=2, context_window=4)


# ====================================================================== SwiGLU and the block


@given(lead=st.lists(st.integers(1, 3), max_size=2).map(tuple), half=st.integers(1, 4))
def test_swiglu_gradient_matches_finite_differences(lead, half):
    check_grads(lambda x: SwiGLU()(x), randn(*lead, 2 * half) * 3)


def test_swiglu_matches_pytorch_and_is_stable():
    torch = pytest.importorskip("torch")
    x = randn(3, 8) * 4
    x[0, :4] = [-800.0, 800.0, 0.0, -30.0]  # no overflow, no NaN
    tx = torch.tensor(x, requires_grad=True)
    a, b = tx.chunk(2, dim=-1)
    expected = torch.nn.functional.silu(a) * b
    dy = randn(3, 4, seed=1)
    expected.backward(torch.tensor(dy))
    X = Tensor(x)
    out = SwiGLU()(X)
    out.backward(dy)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(X.grad.array, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_llama_hidden_size():
    assert llama_hidden_size(4096, 4, 256) == 11008  # Llama 7B
    assert llama_hidden_size(384, 4, 64) == 1024
    assert llama_hidden_size(32, 4, 16) == 96


def test_block_gradient_matches_finite_differences():
    np.random.seed(0)
    block = LlamaTransformerBlock(8, n_heads=4, n_kv_heads=2, context_window=4, hidden_dim=6)
    for _, p in block.named_parameters():
        p.array = p.array.astype(np.float64)
    check_grads(lambda x: block(x), randn(2, 3, 8), rtol=1e-5, atol=1e-7)
    assert [name for name, _ in block.named_parameters()] == [
        "rms_norm_1.gamma",
        "attention.qkv_projection.weights",
        "attention.out_projection.weights",
        "rms_norm_2.gamma",
        "mlp.up_projection.weights",
        "mlp.down_projection.weights",
    ]


# ====================================================================== the model


@pytest.mark.parametrize(
    "n_kv_heads, tie_weights", [(2, True), (4, False), (1, True)], ids=["gqa", "mha", "mqa"]
)
@pytest.mark.parametrize("length", [16, 7])
def test_logits_loss_and_every_gradient_match_the_pytorch_twin(n_kv_heads, tie_weights, length):
    ref = pytest.importorskip("torch_reference")
    twin = pytest.importorskip("torch_llama")
    config = replace(SMALL, n_kv_heads=n_kv_heads, tie_weights=tie_weights)
    hidden = llama_hidden_size(config.embedding_dim, config.expansion_ratio, 16)
    inputs, targets = tokens(3, length, seed=1), tokens(3, length, seed=2)
    ours, theirs = make_llama(config), twin.TorchLlama(config, hidden)
    n_checked = ref.compare_language_models(ours, theirs, inputs, targets)
    assert n_checked == 2 + 6 * config.n_layers + (not tie_weights)


def test_structure():
    model = make_llama(replace(SMALL, embedding_dim=128, n_layers=4, vocab_size=512))
    names = [name for name, _ in model.named_parameters()]
    assert names[0] == "token_embedding.weights" and names[-1] == "layer_norm.gamma"
    assert not any("position" in n or "bias" in n or "beta" in n for n in names)  # no biases
    qkv = dict(model.named_parameters())["blocks.0.attention.qkv_projection.weights"]
    assert qkv.shape == (128, (4 + 2 * 2) * 32)  # 4 query heads, 2 key/value heads of 32
    assert "n_kv_heads=2" in repr(model)  # (initialisation: tests/test_gpt.py)


def test_causal_prefixes_and_single_sequences():
    model = make_llama()
    batch = tokens(2, 9)
    logits = model(batch).array
    np.testing.assert_allclose(model(batch[1]).array, logits[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(batch[:, :4]).array, logits[:, :4], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="T=17 .* context window of 16"):
        model(tokens(1, 17))


def test_kv_cache_matches_the_full_forward():
    model = make_llama()
    batch = tokens(2, 11)
    with no_grad():
        full = model(batch).array
        caches = model.new_caches(batch_size=2)
        parts = [model(batch[:, a:b], caches).array for a, b in [(0, 5), (5, 6), (6, 11)]]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-4, atol=1e-5)


def test_dropout_trains_and_generation_leaves_training_mode():
    model = make_llama(replace(SMALL, dropout=0.2))
    batch = tokens(2, 8)
    first, second = model(batch).array, model(batch).array
    assert not np.allclose(first, second)  # dropout is active in training
    model.eval()
    np.testing.assert_array_equal(model(batch).array, model(batch).array)
    model.train()
    model.generate(tokens(1, 2), 3, rng=np.random.default_rng(0))
    assert all(layer.training for layer in model.layers())


def test_checkpoints_pickles_and_configs_round_trip():
    model = make_llama()
    model(tokens(1, 4)).sum().backward()
    batch = tokens(2, 9)
    clone = pickle.loads(pickle.dumps(model))
    assert isinstance(clone, Llama) and isinstance(clone, GPT)  # inference.py loads GPTs
    np.testing.assert_array_equal(clone(batch).array, model(batch).array)

    config = GPTConfig.from_dict(model.config.to_dict())
    assert (config.arch, config.n_kv_heads, config.rope_theta) == ("llama", 2, 10000.0)
    fresh = make_llama(config, seed=5)
    fresh.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(fresh(batch).array, model(batch).array)
    with pytest.raises(ValueError, match="unexpected keys"):
        fresh.load_state_dict({**model.state_dict(), "position_embedding.weights": np.zeros(3)})


def test_build_model_and_config_checks():
    assert type(build_model(replace(SMALL, arch="gpt2"))) is GPT
    assert type(build_model(SMALL)) is Llama
    assert get_config("shakespeare-char", arch="llama").arch == "llama"
    assert replace(SMALL, n_kv_heads=None).kv_heads == SMALL.n_heads
    with pytest.raises(ValueError, match="use build_model"):
        GPT(SMALL)
    with pytest.raises(ValueError, match="arch must be one of"):
        replace(SMALL, arch="mamba")
    with pytest.raises(ValueError, match="multiple of n_kv_heads=3"):
        replace(SMALL, n_kv_heads=3)
    with pytest.raises(ValueError, match="even head size"):
        replace(SMALL, embedding_dim=36, n_heads=4, n_kv_heads=None)


def test_fp16_forward_keeps_float32_master_weights():
    model = make_llama()
    ids = tokens(2, 8)
    reference = model(ids).array
    logits = model(ids, precision=Precision("fp16"))
    assert logits.dtype == np.float32
    np.testing.assert_allclose(logits.array, reference, atol=0.02)
    CrossEntropy()(ids, logits).backward()
    for name, p in model.named_parameters():
        assert p.dtype == np.float32 and p.grad.dtype == np.float32, name


def test_llama_on_every_backend(xp):
    """On ``xp``'s device (a GPU) the logits and gradients are the host's; on every backend
    generating with the KV cache gives the tokens of generating without it."""
    model = make_llama()
    batch = tokens(2, 9)

    def run(array_module):
        logits = model(array_module.asarray(batch))
        CrossEntropy()(array_module.asarray(batch), logits).backward()
        return logits

    # the host against itself would compare nothing; its numbers are the PyTorch twin's
    # (test_logits_loss_and_every_gradient_match_the_pytorch_twin)
    if xp is not np:
        same_on_host_and(xp, model, run, rtol=1e-3, atol=1e-5)
    cached = model.generate(tokens(1, 3), 20, rng=np.random.default_rng(0))
    full = model.generate(tokens(1, 3), 20, rng=np.random.default_rng(0), use_cache=False)
    np.testing.assert_array_equal(cached, full)


def test_inference_script_samples_from_a_pickled_llama(tmp_path, capsys):
    inference = pytest.importorskip("inference")  # the script at the repository's root
    tokeniser = CharTokeniser().train("abcdefgh \n")
    model = make_llama(replace(SMALL, vocab_size=tokeniser.vocab_size))
    save_pickle(model, tmp_path / "model.pkl")
    tokeniser.save(tmp_path / "tokeniser.json")
    argv = [str(tmp_path / "model.pkl"), "--prompt", "abc", "--max-tokens", "12", "--seed", "0"]
    inference.main(argv)
    first = capsys.readouterr().out
    assert first.startswith("abc") and len(first) == len("abc") + 12 + 1  # and a newline
    inference.main(argv)
    assert capsys.readouterr().out == first  # seeded: reproducible

"""GPT: against PyTorch (logits, loss, every gradient), input checks, initialisation and
KV-cache generation (of the GPT and of the Llama variant), and pickling."""

import pickle
from dataclasses import replace

import numpy as np
import pytest

from tricycle.configs import CONFIGS, DebugConfig, GPTConfig, get_config
from tricycle.models import GPT, build_model, sample_next

SMALL = DebugConfig(
    embedding_dim=32, context_window=16, vocab_size=50, n_heads=4, n_layers=2, dropout=0.0
)


def make_gpt(config=SMALL, seed=0) -> GPT:
    np.random.seed(seed)
    return GPT(config)


def tokens(batch, length, vocab=SMALL.vocab_size, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, size=(batch, length))


# ------------------------------------------------------------------ against PyTorch


@pytest.mark.parametrize(
    "tie_weights, bias",
    [(True, True), (False, True), (True, False)],
    ids=["tied", "untied", "no-bias"],
)
@pytest.mark.parametrize("length", [16, 7])
def test_logits_loss_and_every_gradient_match_pytorch(tie_weights, bias, length):
    ref = pytest.importorskip("torch_reference")
    config = replace(SMALL, tie_weights=tie_weights, bias=bias)
    inputs, targets = tokens(3, length, seed=1), tokens(3, length, seed=2)
    n_checked = ref.compare_language_models(make_gpt(config), ref.TorchGPT(config), inputs, targets)
    per_block = 12 if bias else 6  # without biases: 2 LayerNorm gains and 4 weight matrices
    assert n_checked == (4 if bias else 3) + per_block * config.n_layers + (not tie_weights)


# ------------------------------------------------------------------ structure and inputs


def test_parameter_names_and_weight_tying():
    tied = make_gpt()
    names = [name for name, _ in tied.named_parameters()]
    assert names[:2] == ["token_embedding.weights", "position_embedding.weights"]
    assert not any(name.startswith("head") for name in names)
    untied = make_gpt(replace(SMALL, tie_weights=False))
    assert untied.num_parameters() - tied.num_parameters() == SMALL.vocab_size * 32
    assert "head.weights" in dict(untied.named_parameters())


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_gpt2_initialisation(arch):
    config = replace(SMALL, embedding_dim=128, n_layers=4, vocab_size=512, arch=arch,
                     n_kv_heads=2, ffn_multiple_of=16)  # fmt: skip
    params = dict(build_model(config).named_parameters())
    residual_std = 0.02 / np.sqrt(2 * config.n_layers)
    for name, p in params.items():
        if name.endswith("bias") or name.endswith("beta"):
            assert (p.array == 0).all(), name
        elif name.endswith("gamma"):
            assert (p.array == 1).all(), name
        elif "out_projection" in name or "down_projection" in name:
            assert abs(p.array.std() - residual_std) < 0.1 * residual_std, name
        else:
            assert abs(p.array.std() - 0.02) < 0.002, name


def test_shorter_sequences_and_single_sequences():
    model = make_gpt()
    batch = tokens(2, 5)
    logits = model(batch).array
    assert logits.shape == (2, 5, SMALL.vocab_size)
    np.testing.assert_allclose(model(batch[1]).array, logits[1], rtol=1e-5, atol=1e-6)
    # causal: a prefix's logits do not depend on what follows
    np.testing.assert_allclose(model(batch[:, :3]).array, logits[:, :3], rtol=1e-5, atol=1e-6)


def test_bad_inputs_raise_clear_errors():
    model = make_gpt()
    with pytest.raises(ValueError, match="T=17 .* context window of 16"):
        model(tokens(1, 17))
    with pytest.raises(IndexError, match=r"\[0, 50\)"):
        model(np.array([[1, 2, 50]]))
    with pytest.raises(IndexError, match=r"\[0, 50\)"):
        model(np.array([[-1, 2]]))
    with pytest.raises(TypeError, match="integers"):
        model(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="batch, tokens"):
        model(np.zeros((1, 0), dtype=int))


def test_configs():
    for name, config_class in CONFIGS.items():
        config = get_config(name)
        assert isinstance(config, config_class) and config.embedding_dim % config.n_heads == 0
    char = get_config("shakespeare-char")
    assert (char.n_layers, char.n_heads, char.embedding_dim, char.context_window) == (
        6,
        6,
        384,
        256,
    )
    assert (char.batch_size, char.dropout, char.max_learning_rate, char.steps) == (
        64,
        0.2,
        1e-3,
        5000,
    )
    assert GPTConfig.from_dict(char.to_dict()).to_dict() | {"name": "ShakespeareCharConfig"} == (
        char.to_dict()
    )
    with pytest.raises(ValueError, match="not divisible"):
        GPTConfig(embedding_dim=10, n_heads=3)
    with pytest.raises(ValueError, match="get_config: name must be one of 'debug', 'cpu'"):
        get_config("gpt-5")


# ------------------------------------------------------------------ generation


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("new_tokens", [10, 40])  # within and well beyond the window of 16
def test_kv_cache_generation_equals_full_recomputation(new_tokens, arch):
    config = replace(SMALL, arch=arch, n_kv_heads=2, ffn_multiple_of=16)  # (GPT-2: unused)
    model = make_gpt(config) if arch == "gpt2" else build_model(config)
    prompt = tokens(2, 3)
    cached = model.generate(prompt, new_tokens, rng=np.random.default_rng(7))
    full = model.generate(prompt, new_tokens, rng=np.random.default_rng(7), use_cache=False)
    assert cached.shape == (2, 3 + new_tokens)
    np.testing.assert_array_equal(cached, full)
    np.testing.assert_array_equal(cached[:, :3], prompt)


def test_generation_options():
    model = make_gpt()
    prompt = tokens(1, 20)[0]  # 1-D and longer than the window: it is cropped
    greedy = model.generate(prompt, 5, temperature=0)
    assert greedy.shape == (25,)
    np.testing.assert_array_equal(greedy, model.generate(prompt, 5, temperature=0))
    first = model(prompt[-16:]).array[-1].argmax()
    assert greedy[20] == first

    a = model.generate(prompt, 8, rng=np.random.default_rng(1))
    b = model.generate(prompt, 8, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(prompt, 1, top_k=0)
    limited = model.generate(prompt, 30, rng=np.random.default_rng(2), vocab_limit=5)
    assert (limited[20:] < 5).all()  # a tokeniser may know fewer ids than the model


def test_generation_leaves_training_mode_and_builds_no_graph():
    model = make_gpt(replace(SMALL, dropout=0.1))
    model.train()
    model.generate(tokens(1, 2), 3, rng=np.random.default_rng(0))
    assert all(layer.training for layer in model.layers())
    assert all(p.grad is None for p in model.parameters())


def test_sample_next_respects_top_k_and_temperature():
    rng = np.random.default_rng(0)
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]] * 2000))
    top2 = sample_next(logits, 1.0, 2, rng)
    assert set(top2) == {2, 3}
    assert abs(np.mean(top2 == 3) - 4 / 7) < 0.05
    assert (sample_next(logits, 0, None, rng) == 3).all()
    cold = sample_next(logits, 0.05, None, rng)
    assert np.mean(cold == 3) > 0.99


def test_pickle_round_trip():
    model = make_gpt()
    model(tokens(1, 4)).sum().backward()  # a graph and grads must not break pickling
    clone = pickle.loads(pickle.dumps(model))
    batch = tokens(2, 9)
    np.testing.assert_array_equal(clone(batch).array, model(batch).array)
    assert all(p.grad is None for p in clone.parameters())
    rng = np.random.default_rng
    np.testing.assert_array_equal(
        clone.generate(batch, 5, rng=rng(3)), model.generate(batch, 5, rng=rng(3))
    )


def test_model_moved_to_gpu_pickles_to_host(xp):
    """A model trained on a GPU pickles to numpy arrays and samples on the CPU."""
    model = make_gpt()
    batch = tokens(2, 6)
    expected = model(batch).array
    if xp is not np:
        model.to_gpu()
        on_gpu = model(xp.asarray(batch)).array
        np.testing.assert_allclose(on_gpu.get(), expected, rtol=1e-4, atol=1e-5)
        greedy = model.generate(batch, 6, temperature=0)  # sampled on the GPU, with its cache
        cpu_model = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(greedy, cpu_model.generate(batch, 6, temperature=0))
    clone = pickle.loads(pickle.dumps(model))
    assert all(isinstance(p.array, np.ndarray) for p in clone.parameters())
    np.testing.assert_allclose(clone(batch).array, expected, rtol=1e-4, atol=1e-5)
    assert clone.generate(batch, 3, rng=np.random.default_rng(0)).shape == (2, 9)

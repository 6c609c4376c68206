"""MultiHeadSelfAttention, MLPBlock and GPT2TransformerBlock: README example, finite
differences, PyTorch, dropout, KV cache."""

import numpy as np
import pytest
from helpers import check_grads

from tricycle.blocks import GPT2TransformerBlock, MLPBlock, MultiHeadSelfAttention
from tricycle.random import manual_seed
from tricycle.tensor import no_grad, to_tensor


def randn(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def test_readme_example():
    attention = MultiHeadSelfAttention(embedding_dim=32, n_heads=2, context_window=32)
    input = to_tensor(np.ones((4, 32, 32)), is_batched=True)  # noqa: A001 - as in the README
    output = attention(input)
    output.backward()
    assert output.shape == (4, 32, 32)
    assert input.grad.shape == (4, 32, 32)
    assert np.isfinite(input.grad.array).all() and np.abs(input.grad.array).sum() > 0


def test_block_input_gradient_matches_finite_differences():
    np.random.seed(0)
    block = GPT2TransformerBlock(embedding_dim=8, n_heads=2, context_window=4)
    check_grads(lambda x: block(x), randn(2, 3, 8, dtype=np.float64), rtol=1e-4, atol=1e-6)


def test_any_length_up_to_the_context_window():
    attention = MultiHeadSelfAttention(embedding_dim=8, n_heads=2, context_window=5)
    for T in (1, 3, 5):
        assert attention(to_tensor(randn(2, T, 8))).shape == (2, T, 8)
    with pytest.raises(ValueError, match="6 positions exceed the context window of 5"):
        attention(to_tensor(randn(2, 6, 8)))
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadSelfAttention(embedding_dim=9, n_heads=2, context_window=5)


def test_two_calls_before_one_backward():
    """Layers keep nothing for backward on themselves: reuse a block twice in one graph."""
    np.random.seed(1)
    block = GPT2TransformerBlock(embedding_dim=8, n_heads=2, context_window=4)
    a, b = to_tensor(randn(1, 4, 8, seed=1)), to_tensor(randn(1, 4, 8, seed=2))
    (block(a) * 2 + block(b)).sum().backward()
    together = {name: p.grad.array.copy() for name, p in block.named_parameters()}
    block.zero_grad()
    (block(to_tensor(a.array)) * 2).sum().backward()
    block(to_tensor(b.array)).sum().backward()  # accumulates onto the first
    for name, p in block.named_parameters():
        np.testing.assert_allclose(together[name], p.grad.array, rtol=1e-5, atol=1e-6)


def test_kv_cache_through_the_block():
    np.random.seed(2)
    block = GPT2TransformerBlock(embedding_dim=12, n_heads=3, context_window=8)
    x = randn(2, 7, 12)
    with no_grad():
        full = block(to_tensor(x)).array
        cache = block.attention.new_cache(batch_size=2)
        parts = [block(to_tensor(x[:, a:b]), cache).array for a, b in [(0, 3), (3, 4), (4, 7)]]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-5, atol=1e-5)


def test_dropout_in_both_residual_branches():
    np.random.seed(3)
    block = GPT2TransformerBlock(8, 2, context_window=4, dropout_prob=0.5)
    x = to_tensor(randn(4, 4, 8))
    # each branch's output goes through dropout: about half of it is zeroed in training
    attention_out = block.attention(x)
    mlp_out = block.mlp(x)
    for out in (attention_out, mlp_out):
        zeros = np.mean(out.array == 0)
        assert 0.35 < zeros < 0.65, zeros
    block.eval()
    for out in (block.attention(x), block.mlp(x)):
        assert np.mean(out.array == 0) == 0
    first, second = block(x).array, block(x).array
    np.testing.assert_array_equal(first, second)  # eval mode is deterministic
    block.train()
    assert not np.allclose(block(x).array, first)


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu"])
def test_mlp_activations(activation):
    np.random.seed(4)
    mlp = MLPBlock(embedding_dim=4, expansion_ratio=2, activation=activation)
    check_grads(lambda x: mlp(x), randn(3, 4, dtype=np.float64) + 0.1, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="MLPBlock: activation must be callable or one of"):
        MLPBlock(4, activation="softplus")


# ------------------------------------------------------------------ against PyTorch


def _compare(ref, ours, theirs, x, dout):
    """Forward, input gradient and every parameter gradient of ``ours`` vs ``theirs``, with
    ours's weights copied into theirs."""
    ref.copy_weights(ours, theirs)
    ours_in = to_tensor(x)
    out = ours(ours_in)
    out.backward(dout)

    theirs_in = ref.torch.tensor(x, requires_grad=True)
    expected = theirs(theirs_in)
    expected.backward(ref.torch.tensor(dout))

    ref.assert_close(out.array, expected.detach().numpy(), name="output")
    ref.assert_close(ours_in.grad.array, theirs_in.grad.numpy(), name="input gradient")
    assert ref.compare_grads(ours, theirs) == len(list(theirs.parameters()))


@pytest.mark.parametrize(
    "ours, theirs, shape",
    [
        (lambda: MultiHeadSelfAttention(embedding_dim=32, n_heads=4, context_window=16),
         lambda ref: ref.TorchAttention(32, 4), (3, 11, 32)),
        (lambda: MLPBlock(embedding_dim=16, expansion_ratio=4, activation="gelu"),
         lambda ref: ref.TorchMLP(16, 4, "none"), (2, 5, 16)),
        (lambda: MLPBlock(embedding_dim=16, expansion_ratio=4, activation="gelu_tanh"),
         lambda ref: ref.TorchMLP(16, 4, "tanh"), (2, 5, 16)),
        (lambda: GPT2TransformerBlock(embedding_dim=32, n_heads=4, context_window=16),
         lambda ref: ref.TorchBlock(32, 4), (2, 16, 32)),
    ],
    ids=["attention", "mlp-gelu", "mlp-gelu-tanh", "transformer-block"],
)  # fmt: skip
def test_blocks_match_pytorch(ours, theirs, shape):
    ref = pytest.importorskip("torch_reference")
    _compare(ref, ours(), theirs(ref), randn(*shape), randn(*shape, seed=1))


def test_attention_dropout_only_in_training():
    """Dropout of attention probabilities: random per call in training, off in eval, and the
    masks come from the layer's own generator (so tricycle.manual_seed reproduces them)."""
    manual_seed(0)
    layer = MultiHeadSelfAttention(16, 2, 32, attention_dropout_prob=0.5)
    x = to_tensor(np.random.default_rng(0).normal(size=(2, 32, 16)))
    first, second = layer(x).array, layer(x).array
    assert not np.allclose(first, second)
    layer.eval()
    np.testing.assert_array_equal(layer(x).array, layer(x).array)
    no_dropout = MultiHeadSelfAttention(16, 2, 32)
    no_dropout.load_state_dict(layer.state_dict())
    np.testing.assert_allclose(layer(x).array, no_dropout(x).array, rtol=1e-6)

    manual_seed(0)
    again = MultiHeadSelfAttention(16, 2, 32, attention_dropout_prob=0.5)
    np.testing.assert_allclose(again(x).array, first, rtol=1e-6)


def test_block_applies_its_dropout_to_attention_probabilities():
    block = GPT2TransformerBlock(16, 2, 8, dropout_prob=0.2)
    assert block.attention.attention_dropout.probability == 0.2

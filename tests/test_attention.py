"""Fused causal attention: against finite differences, PyTorch, and its own KV-cache path."""

import contextlib
import multiprocessing
import os
from unittest import mock

import numba
import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st

from tricycle import dispatch
from tricycle.attention import (
    Attention,
    KVCache,
    attend_with_cache,
    attention_backward,
    attention_forward,
    causal_attention,
)
from tricycle.backends.cpu import attention as cpu_attention
from tricycle.dropout_mask import AttentionDropout, keep_mask
from tricycle.tensor import Tensor, to_tensor


def query_blocks_of(size: int):
    """Force the CPU kernel's blocks of ``size`` queries and keys."""
    return mock.patch.object(cpu_attention, "BLOCK", size)


@given(
    batch=st.integers(1, 2),
    tokens=st.integers(1, 6),
    n_heads=st.integers(1, 3),
    head_dim=st.integers(1, 3),
    query_block=st.sampled_from([1, 2, 4, 64]),
    seed=st.integers(0, 2**16),
    kernels=st.booleans(),
)
def test_gradient_matches_finite_differences(
    batch, tokens, n_heads, head_dim, query_block, seed, kernels
):
    """Over random shapes, the reference and the CPU kernel with blocks from one query each
    to all queries in one."""
    qkv = np.random.default_rng(seed).normal(size=(batch, tokens, 3 * n_heads * head_dim))
    with query_blocks_of(query_block), maybe_references(kernels):
        check_grads(lambda x: causal_attention(x, n_heads), qkv, rtol=1e-5, atol=1e-7)


def maybe_references(kernels: bool):
    """The kernels as dispatched, or the reference formulas."""
    return contextlib.nullcontext() if kernels else dispatch.references()


def test_tensor_used_twice_accumulates():
    """A diamond: the same qkv feeds two attention calls and a residual."""
    qkv = np.random.default_rng(1).normal(size=(2, 4, 12))
    check_grads(
        lambda x: causal_attention(x, 2) * causal_attention(x, 2) + x[..., :4], qkv, rtol=1e-5
    )


def test_is_causal():
    """Changing a later position never changes an earlier output."""
    rng = np.random.default_rng(0)
    qkv = rng.normal(size=(1, 6, 24)).astype(np.float32)
    before = causal_attention(to_tensor(qkv), 2).array
    qkv[:, 4:] = rng.normal(size=(1, 2, 24))
    after = causal_attention(to_tensor(qkv), 2).array
    np.testing.assert_array_equal(before[:, :4], after[:, :4])
    assert not np.allclose(before[:, 4:], after[:, 4:])


def test_first_position_returns_its_own_value():
    qkv = np.random.default_rng(0).normal(size=(2, 3, 3 * 8)).astype(np.float32)
    out = causal_attention(to_tensor(qkv), 2).array
    np.testing.assert_allclose(out[:, 0], qkv[:, 0, 16:], rtol=1e-6)


def test_large_scores_stay_finite():
    qkv = np.full((1, 4, 6), 1e4, dtype=np.float32)
    out = causal_attention(to_tensor(qkv), 1)
    out.backward()
    assert np.isfinite(out.array).all()


def test_array_functions_do_not_modify_inputs():
    qkv = np.random.default_rng(0).normal(size=(2, 5, 12)).astype(np.float32)
    dout = np.random.default_rng(1).normal(size=(2, 5, 4)).astype(np.float32)
    qkv_copy, dout_copy = qkv.copy(), dout.copy()
    out, saved = attention_forward(np, qkv, 2)
    out_copy = out.copy()
    attention_backward(np, dout, saved)
    np.testing.assert_array_equal(qkv, qkv_copy)
    np.testing.assert_array_equal(dout, dout_copy)
    np.testing.assert_array_equal(out, out_copy)


def test_two_calls_before_one_backward():
    """The op keeps nothing on itself: two forwards, then one backward through both."""
    rng = np.random.default_rng(0)
    op = Attention(n_heads=2)
    a = Tensor(rng.normal(size=(1, 3, 12)))
    b = Tensor(rng.normal(size=(1, 3, 12)))
    (op(a) + op(b) * 2).sum().backward()
    expected_a = Tensor(a.array.copy())
    causal_attention(expected_a, 2).sum().backward()
    np.testing.assert_allclose(a.grad.array, expected_a.grad.array)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_threads_give_the_same_result(n_threads):
    """The CPU kernel computes each head on one thread: the result does not depend on how
    many threads share the heads."""
    rng = np.random.default_rng(0)
    qkv = to_tensor(rng.normal(size=(5, 40, 24)).astype(np.float32))
    dout = rng.normal(size=(5, 40, 8)).astype(np.float32)
    previous = numba.get_num_threads()
    with query_blocks_of(8):
        expected = causal_attention(qkv, 2)
        expected.backward(dout)
        expected_grad, qkv.grad = qkv.grad.array, None
        numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
        try:
            out = causal_attention(qkv, 2)
            out.backward(dout)
        finally:
            numba.set_num_threads(previous)
    np.testing.assert_array_equal(out.array, expected.array)
    np.testing.assert_array_equal(qkv.grad.array, expected_grad)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_works_in_a_forked_child():
    """The kernels run in a child process forked after the parent ran them."""
    qkv = np.random.default_rng(0).normal(size=(4, 8, 12)).astype(np.float32)
    expected = _attention_sum(qkv)  # the parent's threads exist now
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_attention_sum, (qkv,)) == pytest.approx(expected, rel=1e-6)


def _attention_sum(qkv) -> float:
    return float(causal_attention(to_tensor(qkv), 2).array.sum())


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="n_heads=5"):
        causal_attention(to_tensor(np.zeros((1, 2, 12))), 5)
    with pytest.raises(ValueError, match="batch, tokens"):
        causal_attention(to_tensor(np.zeros((2, 12))), 2)


def test_kv_cache_matches_full_attention():
    """Feeding positions in chunks through the cache gives the full causal attention."""
    rng = np.random.default_rng(0)
    B, T, H, D = 2, 9, 3, 4
    qkv = rng.normal(size=(B, T, 3 * H * D)).astype(np.float32)
    full, _ = attention_forward(np, qkv, H)
    cache = KVCache(np, B, H, capacity=T, head_dim=D, dtype=np.float32)
    with query_blocks_of(2):  # the chunks span several query blocks
        chunks = [attend_with_cache(np, qkv[:, a:b], H, cache) for a, b in [(0, 4), (4, 5), (5, 9)]]
    np.testing.assert_allclose(np.concatenate(chunks, axis=1), full, rtol=1e-5, atol=1e-6)
    assert cache.length == T
    with pytest.raises(ValueError, match="KV cache holds 9"):
        attend_with_cache(np, qkv[:, :1], H, cache)


# ------------------------------------------------------------------ attention dropout


def dense_dropout_attention(qkv, n_heads: int, probability: float, seed: int):
    """Reference: softmax(q k^T / sqrt(D) + causal mask) * M @ v with the whole (T, T) M."""
    B, T, three_e = qkv.shape
    D = three_e // (3 * n_heads)
    q, k, v = (qkv.reshape(B, T, 3, n_heads, D)[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(D) + np.triu(np.full((T, T), -np.inf), 1)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    rows = np.arange(B * n_heads).reshape(B, n_heads, 1, 1) * T + np.arange(T)[:, None]
    mask = keep_mask(np, seed, probability, rows, np.arange(T), np.float64)  # (B, H, T, T)
    return ((probs * mask) @ v).transpose(0, 2, 1, 3).reshape(B, T, three_e // 3), mask


@given(
    batch=st.integers(1, 2),
    tokens=st.integers(1, 6),
    n_heads=st.integers(1, 3),
    head_dim=st.integers(1, 3),
    query_block=st.sampled_from([1, 2, 64]),
    probability=st.sampled_from([0.1, 0.5, 0.9]),
    seed=st.integers(0, 2**32 - 1),
)
def test_dropout_gradient_matches_finite_differences(
    batch, tokens, n_heads, head_dim, query_block, probability, seed
):
    """The same mask in forward and backward: the dropped op is a deterministic function."""
    qkv = np.random.default_rng(seed % 2**16).normal(size=(batch, tokens, 3 * n_heads * head_dim))
    with query_blocks_of(query_block):
        check_grads(
            lambda x: causal_attention(x, n_heads, probability, seed), qkv, rtol=1e-5, atol=1e-7
        )


@pytest.mark.parametrize("query_block", [4, 64])
def test_dropout_output_is_the_masked_softmax(query_block):
    rng = np.random.default_rng(3)
    qkv = rng.normal(size=(2, 37, 3 * 3 * 4))
    with query_blocks_of(query_block):
        out = causal_attention(Tensor(qkv), 3, 0.2, seed=12345).array
    expected, mask = dense_dropout_attention(qkv, 3, 0.2, 12345)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    assert set(np.unique(mask)) == {0.0, 1 / 0.8}


def test_dropout_mask_statistics():
    """About p of the elements are dropped; masks of other seeds, rows and keys are
    independent: two masks agree on a fraction p^2 + (1 - p)^2 of elements."""
    p = 0.2
    rows = np.arange(512)[:, None]
    kept = keep_mask(np, 7, p, rows, np.arange(512)) > 0  # 262,144 elements
    assert kept.mean() == pytest.approx(1 - p, abs=0.005)
    assert keep_mask(np, 7, p, rows, np.arange(512)).mean() == pytest.approx(1.0, abs=0.01)
    agree = p**2 + (1 - p) ** 2
    other_seed = keep_mask(np, 8, p, rows, np.arange(512)) > 0
    assert (kept == other_seed).mean() == pytest.approx(agree, abs=0.005)
    assert (kept[1:] == kept[:-1]).mean() == pytest.approx(agree, abs=0.005)  # next row
    assert (kept[:, 1:] == kept[:, :-1]).mean() == pytest.approx(agree, abs=0.005)  # next key
    assert not (keep_mask(np, 7, 0.0, rows, np.arange(512)) == 0).any()


def torch_dense_attention(qkv, n_heads, dout, probability=0.0, seed=0):
    """torch autograd of the dense formula with ``dense_dropout_attention``'s mask (all ones
    without dropout), in ``qkv``'s dtype: (out (B, T, E), dqkv (B, T, 3E)) as numpy."""
    torch = pytest.importorskip("torch")
    B, T, three_e = qkv.shape
    D = three_e // (3 * n_heads)
    _, mask = dense_dropout_attention(qkv.astype(np.float64), n_heads, probability, seed)
    theirs = torch.tensor(qkv, requires_grad=True)
    q, k, v = theirs.view(B, T, 3, n_heads, D).permute(2, 0, 3, 1, 4)
    probs = torch.softmax(
        (q @ k.transpose(-1, -2)) / D**0.5 + torch.triu(torch.full((T, T), -torch.inf), 1), -1
    )
    expected = ((probs * torch.tensor(mask, dtype=theirs.dtype)) @ v).transpose(1, 2)
    expected = expected.reshape(B, T, three_e // 3)
    expected.backward(torch.tensor(dout))
    return expected.detach().numpy(), theirs.grad.numpy()


def test_dropout_matches_pytorch_with_the_same_mask():
    """The gradient through dropped probabilities equals torch autograd of the dense formula."""
    rng = np.random.default_rng(0)
    B, T, H, D = 2, 70, 2, 8
    qkv = rng.normal(size=(B, T, 3 * H * D)).astype(np.float32)
    dout = rng.normal(size=(B, T, H * D)).astype(np.float32)
    ours = to_tensor(qkv)
    out = causal_attention(ours, H, 0.3, seed=99)
    out.backward(dout)

    expected, expected_grad = torch_dense_attention(qkv, H, dout, 0.3, 99)
    np.testing.assert_allclose(out.array, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.grad.array, expected_grad, rtol=1e-4, atol=1e-5)


def test_dropout_probability_is_checked():
    with pytest.raises(ValueError, match=r"causal_attention: dropout_prob must be .*, got 1.0"):
        causal_attention(to_tensor(np.zeros((1, 2, 6))), 1, 1.0)
    with pytest.raises(ValueError, match="AttentionDropout: probability must be .*got -0.1"):
        AttentionDropout(-0.1)


# ------------------------------------------------------------------ against PyTorch


@pytest.mark.parametrize(
    "shape",
    [(2, 16, 32, 4), (1, 1, 8, 1), (3, 33, 48, 6), (2, 150, 64, 2)],  # 150: 3 blocks
)
def test_matches_pytorch(shape):
    ref = pytest.importorskip("torch_reference")
    B, T, E, H = shape
    rng = np.random.default_rng(0)
    qkv = rng.normal(size=(B, T, 3 * E)).astype(np.float32)
    dout = rng.normal(size=(B, T, E)).astype(np.float32)

    ours = to_tensor(qkv)
    out = causal_attention(ours, H)
    out.backward(dout)

    theirs = ref.torch.tensor(qkv, requires_grad=True)
    expected = ref.causal_attention(theirs, H)
    expected.backward(ref.torch.tensor(dout))

    assert out.dtype == np.float32 and ours.grad.dtype == np.float32
    ref.assert_close(out.array, expected.detach().numpy(), name="output")
    ref.assert_close(ours.grad.array, theirs.grad.numpy(), name="dqkv")


# ------------------------------------------------------------------ every backend


@pytest.mark.parametrize("use_kernels", [True, False], ids=["kernels", "xp"])
def test_every_backend_matches_numpy(xp, use_kernels, monkeypatch):
    """On cupy both the CUDA kernel and the xp code path agree with numpy; on numpy, the CPU
    kernel and the xp code path agree with torch autograd of the dense formula."""
    if not use_kernels:
        monkeypatch.setenv("TRICYCLE_DISABLE_KERNELS", "1")
    rng = np.random.default_rng(0)
    B, T, H, D = 2, 70, 2, 32  # T spans several CPU query blocks
    qkv = rng.normal(size=(B, T, 3 * H * D)).astype(np.float32)
    dout = rng.normal(size=(B, T, H * D)).astype(np.float32)

    def host(probability=0.0, seed=0):
        """(out, dqkv) on the host: numpy's for another backend, torch's on numpy's own (the
        host against itself would compare nothing)."""
        if xp is np:
            return torch_dense_attention(qkv, H, dout, probability, seed)
        expected = to_tensor(qkv)
        out = causal_attention(expected, H, probability, seed=seed)
        out.backward(dout)
        return out.array, expected.grad.array

    expected_out, expected_grad = host()
    ours = to_tensor(xp.asarray(qkv))
    out = causal_attention(ours, H)
    out.backward(xp.asarray(dout))
    assert out.xp is xp and ours.grad.xp is xp
    np.testing.assert_allclose(out.numpy(), expected_out, atol=1e-5)
    np.testing.assert_allclose(ours.grad.numpy(), expected_grad, rtol=1e-4, atol=1e-5)

    # with dropout, every backend draws numpy's mask
    dropped_out, dropped_grad = host(0.2, 2024)
    ours_dropped = to_tensor(xp.asarray(qkv))
    out_dropped = causal_attention(ours_dropped, H, 0.2, seed=2024)
    out_dropped.backward(xp.asarray(dout))
    np.testing.assert_allclose(out_dropped.numpy(), dropped_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_dropped.grad.numpy(), dropped_grad, rtol=1e-4, atol=1e-5)

    cache = KVCache(xp, B, H, capacity=T, head_dim=D, dtype=np.float32)
    first = attend_with_cache(xp, xp.asarray(qkv[:, :50]), H, cache)
    rest = attend_with_cache(xp, xp.asarray(qkv[:, 50:]), H, cache)
    cached = np.concatenate([to_tensor(first).numpy(), to_tensor(rest).numpy()], axis=1)
    np.testing.assert_allclose(cached, out.numpy(), rtol=1e-4, atol=1e-5)

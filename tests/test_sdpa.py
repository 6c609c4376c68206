"""General scaled dot-product attention: finite differences, PyTorch, and the CPU kernel."""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st

from tricycle import dispatch
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout
from tricycle.nn.sdpa import (
    attention_bias,
    key_padding_mask,
    scaled_dot_product_attention,
    sdpa_backward,
    sdpa_forward,
    visible_keys,
)
from tricycle.tensor import Tensor

MASKS = ["none", "bool", "additive", "padding"]


def make_mask(rng, kind: str, B: int, H: int, Tq: int, Tk: int):
    """A mask of ``kind`` in a broadcastable shape; keeps key 0 visible so no row is empty."""
    if kind == "none":
        return None
    if kind == "padding":
        padding = rng.random((B, Tk)) > 0.4
        padding[:, 0] = True
        return key_padding_mask(padding)
    if kind == "bool":
        mask = rng.random((B, 1, Tq, Tk)) > 0.4
        mask[..., 0] = True
        return mask
    return rng.normal(size=(1, H, Tq, Tk))  # additive, per head


def inputs(rng, B, H, Hkv, Tq, Tk, D, Dv, dtype=np.float64):
    return (
        rng.normal(size=(B, H, Tq, D)).astype(dtype),
        rng.normal(size=(B, Hkv, Tk, D)).astype(dtype),
        rng.normal(size=(B, Hkv, Tk, Dv)).astype(dtype),
    )


@given(
    batch=st.integers(1, 2),
    kv_heads=st.integers(1, 2),
    group=st.integers(1, 2),
    n_queries=st.integers(1, 4),
    n_keys=st.integers(1, 4),
    head_dim=st.integers(1, 3),
    value_dim=st.integers(1, 3),
    mask=st.sampled_from(MASKS),
    causal=st.booleans(),
    window=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 2**16),
)
def test_gradient_matches_finite_differences(
    batch, kv_heads, group, n_queries, n_keys, head_dim, value_dim, mask, causal, window, seed
):
    """Every mask kind, causal or not, windows, cross-attention (Tq != Tk) and GQA."""
    rng = np.random.default_rng(seed)
    H = kv_heads * group
    q, k, v = inputs(rng, batch, H, kv_heads, n_queries, n_keys, head_dim, value_dim)
    m = make_mask(rng, mask, batch, H, n_queries, n_keys)
    check_grads(
        lambda q, k, v: scaled_dot_product_attention(q, k, v, m, causal=causal, window=window),
        q, k, v, rtol=1e-5, atol=1e-7,
    )  # fmt: skip


def test_gradient_with_dropout_and_a_diamond():
    """Dropout's mask is a function of the seed, so finite differences see the same one; the
    same q feeds two attentions and a residual."""
    rng = np.random.default_rng(3)
    q, k, v = inputs(rng, 2, 4, 2, 3, 5, 3, 2)

    def f(q, k, v):
        a = scaled_dot_product_attention(q, k, v, dropout_prob=0.3, seed=11)
        b = scaled_dot_product_attention(q, k, v, causal=True)
        return a * b + q[..., :2]

    check_grads(f, q, k, v, rtol=1e-5, atol=1e-7)


def test_dropout_keeps_the_expectation():
    """Kept probabilities are scaled by 1 / (1 - p): the mean over 2000 masks is the output
    without dropout, within 4 standard errors of that mean. With p = 0.25 the wrong scalings
    (1 / p, none) would be off by 200% and 25%: dozens of standard errors here."""
    rng = np.random.default_rng(0)
    q, k, v = inputs(rng, 1, 1, 1, 4, 4, 2, 3)
    plain = scaled_dot_product_attention(q, k, v).array  # (1, 1, 4, 3)
    samples = np.stack(
        [scaled_dot_product_attention(q, k, v, dropout_prob=0.25, seed=s).array
         for s in range(2000)])  # fmt: skip
    mean = samples.mean(axis=0)
    standard_error = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
    assert (np.abs(mean - plain) <= 4 * standard_error).all(), (mean - plain) / standard_error


def test_rows_that_see_no_key_give_zero_and_no_gradient():
    rng = np.random.default_rng(0)
    q, k, v = (Tensor(a, requires_grad=True) for a in inputs(rng, 1, 2, 1, 3, 4, 2, 2))
    mask = np.ones((1, 1, 3, 4), dtype=bool)
    mask[0, 0, 1] = False  # query 1 sees nothing
    out = scaled_dot_product_attention(q, k, v, mask)
    out.backward(np.ones(out.shape))
    assert np.isfinite(out.array).all() and np.isfinite(q.grad.array).all()
    np.testing.assert_array_equal(out.array[:, :, 1], 0)
    np.testing.assert_array_equal(q.grad.array[:, :, 1], 0)
    # causal cross-attention with more queries than keys: the first queries see no key
    out = scaled_dot_product_attention(q[:, :, :3], k[:, :, :1], v[:, :, :1], causal=True)
    np.testing.assert_array_equal(out.array[:, :, :2], 0)


def test_window_and_causal_positions():
    seen = visible_keys(np, 3, 5, causal=True, window=2)  # queries at positions 2, 3, 4
    expected = [[0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    np.testing.assert_array_equal(seen, np.array(expected, dtype=bool))
    both_ways = visible_keys(np, 4, 4, causal=False, window=2)
    np.testing.assert_array_equal(both_ways, np.abs(np.subtract.outer(range(4), range(4))) < 2)


@pytest.mark.parametrize("bad", ["shapes", "dtype", "mask", "window"])
def test_bad_inputs_name_the_op(bad):
    q, k, v = inputs(np.random.default_rng(0), 1, 2, 1, 3, 4, 2, 2)
    kwargs = {}
    if bad == "shapes":
        k = k[..., :1]
    elif bad == "dtype":
        k = k.astype(np.float32)
    elif bad == "mask":
        kwargs["mask"] = np.ones((3, 3), dtype=bool)
    else:
        kwargs["window"] = 0
    with pytest.raises((ValueError, TypeError), match="scaled_dot_product_attention"):
        scaled_dot_product_attention(q, k, v, **kwargs)


# ------------------------------------------------------------------ PyTorch


def torch_twin(torch, q, k, v, mask, causal, window, dout):
    """torch's attention with the same visibility: positions as an explicit boolean mask."""
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    Tq, Tk = q.shape[2], k.shape[2]
    attn_mask, is_causal = None, False
    if causal and window is None and Tq == Tk and mask is None:
        is_causal = True  # torch's own causal path
    else:
        seen = visible_keys(np, Tq, Tk, causal, window)
        if seen is not None:
            mask = seen if mask is None else np.logical_and(mask, seen)
        if mask is not None:
            attn_mask = torch.tensor(mask)
    out = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=attn_mask, is_causal=is_causal, enable_gqa=True
    )
    out.backward(torch.tensor(dout))
    return out.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()


CASES = {  # name: (B, H, Hkv, Tq, Tk, mask kind, causal, window)
    "bidirectional": (2, 3, 3, 5, 5, "none", False, None),
    "bool mask": (2, 2, 2, 4, 6, "bool", False, None),
    "additive mask": (1, 3, 3, 5, 5, "additive", False, None),
    "key padding": (3, 2, 2, 7, 7, "padding", False, None),
    "causal": (2, 2, 2, 6, 6, "none", True, None),
    "cross attention": (2, 4, 4, 3, 8, "padding", False, None),
    "window": (1, 2, 2, 9, 9, "none", False, 3),
    "causal window": (2, 2, 2, 7, 7, "padding", True, 2),
    "grouped query": (2, 6, 2, 5, 5, "padding", True, None),
    "size one": (1, 1, 1, 1, 1, "none", False, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    B, H, Hkv, Tq, Tk, kind, causal, window = CASES[case]
    rng = np.random.default_rng(len(case))
    q, k, v = inputs(rng, B, H, Hkv, Tq, Tk, 4, 3)
    mask = make_mask(rng, kind, B, H, Tq, Tk)
    tensors = [Tensor(a, requires_grad=True) for a in (q, k, v)]
    out = scaled_dot_product_attention(*tensors, mask, causal=causal, window=window)
    dout = rng.normal(size=out.shape)
    out.backward(dout)
    expected = torch_twin(torch, q, k, v, mask, causal, window, dout)
    ours = [out.array] + [t.grad.array for t in tensors]
    for a, b in zip(ours, expected):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_torch_keywords_name_the_same_arguments():
    """nanoGPT's call, ``F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
    is_causal=True)``, runs as written; against torch for a boolean ``attn_mask``."""
    torch = pytest.importorskip("torch")
    from tricycle.nn import functional as F

    rng = np.random.default_rng(4)
    q, k, v = inputs(rng, 2, 2, 2, 5, 5, 3, 3)
    mask = make_mask(rng, "bool", 2, 2, 5, 5)
    tensors = [Tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*tensors, attn_mask=mask, dropout_p=0.0)
    dout = rng.normal(size=out.shape)
    out.backward(dout)
    expected = torch_twin(torch, q, k, v, mask, False, None, dout)
    for a, b in zip([out.array] + [t.grad.array for t in tensors], expected):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    causal = F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=True)
    np.testing.assert_array_equal(
        causal.array, scaled_dot_product_attention(q, k, v, None, True).array
    )
    with pytest.raises(TypeError, match="give one of them"):
        F.scaled_dot_product_attention(q, k, v, mask, attn_mask=mask)
    with pytest.raises(TypeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, v, is_causal=1)


def test_bfloat16_in_bfloat16_out_as_torch():
    """build-nanogpt under ``autocast(dtype=bfloat16)``: q, k and v of bfloat16 (numpy's kind
    "V") are attention's input, and its output and gradients are bfloat16, as torch's; the
    values are torch's to bfloat16's rounding (a float additive mask too)."""
    torch = pytest.importorskip("torch")
    bfloat16 = pytest.importorskip("ml_dtypes").bfloat16

    rng = np.random.default_rng(7)
    q, k, v = (a.astype(bfloat16) for a in inputs(rng, 2, 2, 2, 6, 6, 8, 8))
    mask = rng.normal(size=(1, 2, 6, 6)).astype(bfloat16)
    tensors = [Tensor(a, requires_grad=True) for a in (q, k, v)]
    out = scaled_dot_product_attention(*tensors, mask, causal=True)
    dout = rng.normal(size=out.shape).astype(bfloat16)
    out.backward(dout)
    assert {out.dtype, *(t.grad.dtype for t in tensors)} == {np.dtype(bfloat16)}
    twins = [torch.tensor(a.astype(np.float32)).bfloat16().requires_grad_() for a in (q, k, v)]
    bias = torch.tensor(mask.astype(np.float32)).bfloat16()
    bias = bias.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    theirs = torch.nn.functional.scaled_dot_product_attention(*twins, attn_mask=bias)
    theirs.backward(torch.tensor(dout.astype(np.float32)).bfloat16())
    for a, b in zip([out] + [t.grad for t in tensors], [theirs] + [t.grad for t in twins]):
        expected = b.detach().float().numpy()
        np.testing.assert_allclose(a.array.astype(np.float32), expected, atol=0.05)


def test_dropout_without_a_seed_draws_one_from_tricycle_s_generator():
    """As torch's ``dropout_p``: a new mask each call, the same masks after the same seed."""
    import tricycle

    q, k, v = inputs(np.random.default_rng(0), 1, 2, 2, 6, 6, 3, 3)
    tricycle.manual_seed(7)
    first, second = (scaled_dot_product_attention(q, k, v, dropout_p=0.5).array for _ in "ab")
    assert not np.array_equal(first, second)
    tricycle.manual_seed(7)
    np.testing.assert_array_equal(
        scaled_dot_product_attention(q, k, v, dropout_prob=0.5).array, first
    )
    same = [scaled_dot_product_attention(q, k, v, dropout_prob=0.5, seed=3).array for _ in "ab"]
    np.testing.assert_array_equal(*same)  # a seed given: its mask


# ------------------------------------------------------------------ the CPU kernel


def cpu_kernel():
    pytest.importorskip("numba")
    from tricycle.backends.cpu import sdpa as kernel

    return kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape",  # B, H, Hkv, Tq, Tk, D, Dv: odd sizes, size-1 axes, several tiles, GQA
    [(1, 1, 1, 1, 1, 1, 1), (2, 4, 2, 3, 5, 3, 2), (2, 3, 1, 70, 130, 5, 7)],
)
@pytest.mark.parametrize(
    "options",
    [{}, {"mask": "bool"}, {"mask": "additive"}, {"causal": True}, {"window": 3},
     {"causal": True, "window": 2, "mask": "padding"}, {"dropout": 0.25},
     {"mask": "empty rows"}],
)  # fmt: skip
def test_kernel_matches_reference(dtype, shape, options):
    kernel = cpu_kernel()
    B, H, Hkv, Tq, Tk, D, Dv = shape
    rng = np.random.default_rng(Tq * Tk)
    q, k, v = inputs(rng, B, H, Hkv, Tq, Tk, D, Dv, dtype)
    q = np.asfortranarray(q)  # non-contiguous inputs: a transposed layout and a view
    v = np.concatenate([v, v], axis=-1)[..., :Dv]
    kind = options.get("mask", "none")
    if kind == "empty rows":
        mask = rng.random((B, H, Tq, Tk)) > 0.5
        mask[:, :, ::2] = False
    else:
        mask = make_mask(rng, kind, B, H, Tq, Tk)
    bias = attention_bias(np, mask, np.dtype(dtype))
    p = options.get("dropout", 0)
    args = (bias, options.get("causal", False), options.get("window"), None,
            AttentionDropout(p, 5) if p else NO_DROPOUT)  # fmt: skip
    out, saved = sdpa_forward(np, q, k, v, *args)
    out_k, saved_k = kernel.sdpa_forward(np, q, k, v, *args)
    dout = rng.normal(size=out.shape).astype(dtype)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out_k, out, **tol)
    np.testing.assert_allclose(saved_k[5], saved[5], **tol)  # the log-sum-exps (inf: no key)
    grads, grads_k = sdpa_backward(np, dout, saved), kernel.sdpa_backward(np, dout, saved_k)
    for mine, theirs in zip(grads_k, grads):
        assert mine.dtype == theirs.dtype == dtype
        np.testing.assert_allclose(mine, theirs, **tol)
    # each backward works from the other's forward: they save the same things
    mixed = kernel.sdpa_backward(np, dout, saved), sdpa_backward(np, dout, saved_k)
    for mine, theirs in zip(*mixed):
        np.testing.assert_allclose(mine, theirs, **tol)


def test_dispatch_picks_the_kernel_at_every_size():
    kernel = cpu_kernel()
    reference, pair = (sdpa_forward, sdpa_backward), (kernel.sdpa_forward, kernel.sdpa_backward)
    op = "scaled_dot_product_attention"
    for shape in [(2, 4, 512, 1), (1, 1, 1, 1), (1, 4, 8192, 1)]:
        q = np.zeros(shape, dtype=np.float32)
        assert dispatch.choose(op, reference, q, q, q) == pair
        with dispatch.references():
            assert dispatch.choose(op, reference, q, q, q) is reference


@pytest.mark.parametrize("options", [{}, {"causal": True, "window": 2}, {"dropout_prob": 0.2}])
def test_same_on_every_device(xp, options):
    """The reference is written against ``xp``: on a GPU (cupy) it gives the numbers it gives
    on the host, gradients and the dropout mask included. On the host, the CPU kernel it
    runs there gives the reference formulas' numbers, and without dropout torch's."""
    from tricycle import backend

    rng = np.random.default_rng(0)
    arrays = inputs(rng, 2, 4, 2, 5, 6, 3, 3, np.float32)
    mask = key_padding_mask(rng.random((2, 6)) > 0.3)  # (2, 1, 1, 6)
    dout = rng.normal(size=(2, 4, 5, 3)).astype(np.float32)

    def run(module):
        """[out, dq, dk, dv] on the host."""
        tensors = [Tensor(module.asarray(a), requires_grad=True) for a in arrays]
        out = scaled_dot_product_attention(*tensors, module.asarray(mask), seed=3, **options)
        out.backward(module.asarray(dout))
        return [backend.to_host_array(t.array) for t in [out, *(t.grad for t in tensors)]]

    host = run(np)  # float32 on the host: the CPU kernel
    if xp is not np:
        others = [run(xp)]
    else:  # the host against itself would compare nothing: other implementations instead
        with dispatch.references():
            others = [run(np)]
        if "dropout_prob" not in options:
            torch = pytest.importorskip("torch")
            causal, window = options.get("causal", False), options.get("window")
            others.append(torch_twin(torch, *arrays, mask, causal, window, dout))
    for other in others:
        for ours, expected in zip(other, host, strict=True):
            np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)

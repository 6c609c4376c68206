"""The CPU kernels of the matrix product, attention, convolution and the recurrent cells
(tricycle/backends/cpu) against their references: odd sizes, size-1 axes, non-contiguous
inputs, float32 and float64, forward and backward."""

import copy

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tricycle import attention, dispatch
from tricycle.backends.cpu import add as cpu_add
from tricycle.backends.cpu import arrays as cpu_arrays
from tricycle.backends.cpu import attention as cpu_attention
from tricycle.backends.cpu import blas as cpu_blas
from tricycle.backends.cpu import compile as compile_module
from tricycle.backends.cpu import conv as cpu_conv
from tricycle.backends.cpu import gemm as cpu_gemm
from tricycle.backends.cpu import gemv as cpu_gemv
from tricycle.backends.cpu import recurrent as cpu_recurrent
from tricycle.backends.cpu import winograd as cpu_winograd
from tricycle.blocks import MultiHeadSelfAttention
from tricycle.nn import conv, recurrent
from tricycle.tensor import Tensor

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-11)}


def strided(rng, shape, dtype, transposed: bool):
    """A random array of ``shape``; non-contiguous (every other element of a wider array)
    when ``transposed``."""
    if not transposed:
        return rng.standard_normal(shape).astype(dtype)
    wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
    return wide[..., ::2]


def close(got, expected, dtype, what):
    assert got.dtype == expected.dtype, what
    np.testing.assert_allclose(got, expected, **TOLERANCE[dtype], err_msg=what)


def test_every_kernel_of_these_families_is_registered():
    ops = {k.op for k in dispatch.kernels(device="cpu")}
    assert {"attention", "attend", "conv", "rnn_cell", "gru_cell", "lstm_cell"} <= ops
    assert {"lstm_recurrence", "matmul", "add"} <= ops


# ------------------------------------------------------------------ a + b
@given(
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=3).map(tuple),
    bias=st.booleans(), transposed=st.booleans(), dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_add_kernel_gives_numpys_bits(shape, bias, transposed, dtype, seed):
    rng = np.random.default_rng(seed)
    a = strided(rng, shape, dtype, transposed)
    b = rng.standard_normal(shape[-1:] if bias else shape).astype(dtype)
    kernel = dispatch.choose("add", np.add, a, b)
    assert (kernel is cpu_add.add) == (not transposed or a.flags.c_contiguous)
    np.testing.assert_array_equal(kernel(a, b), a + b)
    rows = np.ascontiguousarray(a).reshape(-1, shape[-1])
    out = np.empty_like(rows)
    cpu_add.add_kernel.run(True, out, rows, b.reshape(-1, shape[-1]), rows.shape[0])  # threads
    np.testing.assert_array_equal(out, (a + b).reshape(rows.shape))


# ------------------------------------------------------------------ the matrix product
def _matrix(rng, shape, dtype, layout):
    """A random matrix stored plainly ("C"), transposed ("F") or strided ("strided")."""
    if layout == "F":
        return np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(dtype)).T
    return strided(rng, shape, dtype, layout == "strided")


@given(
    m=st.integers(1, 300), k=st.integers(1, 70), n=st.integers(1, 300),
    layouts=st.tuples(*[st.sampled_from(["C", "F", "strided"])] * 2),
    dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_matmul_kernel_matches_numpy(m, k, n, layouts, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = _matrix(rng, (m, k), dtype, layouts[0]), _matrix(rng, (k, n), dtype, layouts[1])
    kernel = dispatch.choose("matmul", np.matmul, a, b)
    plain = all(x.flags.c_contiguous or x.flags.f_contiguous for x in (a, b))
    plain = plain and not cpu_gemv.applies(a, b)  # one row: tests/test_cpu_gemv.py
    assert (kernel is cpu_gemm.matmul) == plain  # a strided operand: numpy's
    close(kernel(a, b), np.matmul(a, b), dtype, f"{m}x{k}x{n} {layouts}")
    if kernel is cpu_gemm.matmul:  # in slices on the kernel's threads, and in one BLAS call
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cpu_gemm, "PARALLEL_MIN_WORK", 0)
            patch.setattr(compile_module, "PARALLEL_MIN_SIZE", 0)
            sliced = cpu_gemm.matmul(a, b)
            patch.setattr(cpu_gemm, "thread_count", lambda: 1)
            close(sliced, cpu_gemm.matmul(a, b), dtype, "sliced against one call")


def test_the_einsum_products_run_on_the_kernels_threads():
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    assert dispatch.choose("matmul", np.matmul, a, b) is cpu_gemm.matmul


# ------------------------------------------------------------------ attention


@given(
    batch=st.integers(1, 3),
    tokens=st.integers(1, 70),
    heads=st.integers(1, 3),
    head_dim=st.integers(1, 9),
    block=st.sampled_from([1, 3, 16, 64]),
    dropout=st.sampled_from([0.0, 0.3]),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_attention_kernel_matches_reference(
    batch, tokens, heads, head_dim, block, dropout, dtype, transposed, seed
):
    rng = np.random.default_rng(seed % 2**16)
    qkv = strided(rng, (batch, tokens, 3 * heads * head_dim), dtype, transposed)
    dout = strided(rng, (batch, tokens, heads * head_dim), dtype, transposed)
    out, saved = attention.attention_forward(np, qkv, heads, dropout, seed)
    dqkv = attention.attention_backward(np, dout, saved)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpu_attention, "BLOCK", block)
        got, saved = cpu_attention.attention_forward(np, qkv, heads, dropout, seed)
        dgot = cpu_attention.attention_backward(np, dout, saved)
    close(got, out, dtype, "out")
    close(dgot, dqkv, dtype, "dqkv")


def test_the_block_draws_its_attention_seed_as_a_value_once_a_forward():
    """The attention block draws its dropout seed with ``Dropout.step_seed`` (an int on the
    CPU), once a forward, and the fused attention drops with that seed's mask; the math takes
    a value, never a function to call."""
    rng = np.random.default_rng(0)
    block = MultiHeadSelfAttention(12, 2, 16, attention_dropout_prob=0.4)
    x = Tensor(rng.standard_normal((2, 9, 12)))
    twin = np.random.Generator(copy.deepcopy(block.attention_dropout.rng.bit_generator))
    seed = int(twin.integers(2**32))  # what the block's one draw gives
    y = block(x)
    assert block.attention_dropout.rng.bit_generator.state == twin.bit_generator.state
    qkv = block.qkv_projection(x)
    expected = block.out_projection(attention.causal_attention(qkv, 2, 0.4, seed))
    np.testing.assert_array_equal(y.array, expected.array)
    with pytest.raises(TypeError, match="causal_attention: seed must be an integer"):
        attention.causal_attention(qkv, 2, 0.4, lambda: 7)


@given(
    batch=st.integers(1, 2),
    tokens=st.integers(1, 40),
    kv_heads=st.integers(1, 2),
    group=st.integers(1, 3),
    head_dim=st.integers(1, 5),
    dtype=st.sampled_from(DTYPES),
)
def test_attention_kernel_groups_query_heads(batch, tokens, kv_heads, group, head_dim, dtype):
    """Grouped-query attention: the kernels on k, v of Hkv heads equal the reference on
    k, v repeated for each query head of their group (and the gradients summed per group)."""
    rng = np.random.default_rng(tokens)
    H = kv_heads * group
    q = rng.standard_normal((batch, tokens, H, head_dim)).astype(dtype)
    k, v = (rng.standard_normal((batch, tokens, kv_heads, head_dim)).astype(dtype) for _ in "kv")
    dout = rng.standard_normal((batch, tokens, H, head_dim)).astype(dtype)
    repeated = [a.repeat(group, axis=2) for a in (k, v)]  # (B, T, H, D)
    qkv = np.concatenate([q] + repeated, axis=2).reshape(batch, tokens, 3 * H * head_dim)
    out, saved = attention.attention_forward(np, qkv, H)
    dqkv = attention.attention_backward(np, dout.reshape(out.shape), saved)
    dqkv = dqkv.reshape(batch, tokens, 3, H, head_dim)

    got = np.empty_like(q)
    lse = np.empty((batch, H, tokens), dtype=dtype)
    cpu_attention.attention_forward_kernel(q, k, v, got, lse, 0, 0, 1.0, 16, batch * H)
    close(got.reshape(out.shape), out, dtype, "out")
    dq, dk, dv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
    cpu_attention.attention_backward_kernel(q, k, v, got, dout, lse, dq, dk, dv, 0, 0, 1.0, 16,
                                            batch * kv_heads)  # fmt: skip
    close(dq, dqkv[:, :, 0], dtype, "dq")
    for i, got_kv in ((1, dk), (2, dv)):
        expected = dqkv[:, :, i].reshape(batch, tokens, kv_heads, group, head_dim).sum(axis=3)
        close(got_kv, expected, dtype, "dk" if i == 1 else "dv")


@given(tokens=st.integers(1, 30), cached=st.integers(0, 30), dtype=st.sampled_from(DTYPES))
def test_cache_path_kernel_matches_reference(tokens, cached, dtype):
    """New queries after ``cached`` positions: the last ``tokens`` of the keys."""
    rng = np.random.default_rng(tokens + 31 * cached)
    q = rng.standard_normal((2, 3, tokens, 4)).astype(dtype)
    k, v = (rng.standard_normal((2, 3, cached + tokens, 4)).astype(dtype) for _ in "kv")
    close(cpu_attention.attend(np, q, k, v), attention.attend(np, q, k, v), dtype, "attend")


def signatures(dispatcher, dtype) -> set:
    """The signatures of ``dispatcher`` in this process whose first argument is of ``dtype``."""
    return {sig for sig in dispatcher.overloads if str(sig[0].dtype) == np.dtype(dtype).name}


def test_attention_kernels_run_one_compiled_function_whatever_the_layouts():
    """q, k, v and their gradients typed as strided views at the kernels' boundary: contiguous
    arrays (a decode step's query at batch 1, the kernels called directly) and views of qkv
    run the same compiled kernel, with the same numbers."""
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((2, 5, 3 * 2 * 3))  # float64: no other test's float64 here
    q, k, v = (np.ascontiguousarray(a) for a in cpu_attention._heads(qkv, 2))
    out, lse = np.empty_like(q), np.empty((2, 2, 5))
    cpu_attention.attention_forward_kernel(q, k, v, out, lse, 0, 0, 1.0, 64, 4)
    views, _ = cpu_attention.attention_forward(np, qkv, 2)
    np.testing.assert_array_equal(views, out.reshape(views.shape))
    dq, dk, dv = (np.empty_like(q) for _ in "qkv")
    dout = rng.standard_normal(q.shape)
    cpu_attention.attention_backward_kernel(q, k, v, out, dout, lse, dq, dk, dv, 0, 0, 1.0, 64, 4)
    _, saved = cpu_attention.attention_forward(np, qkv, 2)
    dqkv = cpu_attention.attention_backward(np, dout.reshape(2, 5, 6), saved)
    np.testing.assert_array_equal(dqkv.reshape(2, 5, 3, 2, 3), np.stack([dq, dk, dv], axis=2))
    for kernel in (cpu_attention.attention_forward_kernel, cpu_attention.attention_backward_kernel):
        (sig,) = signatures(kernel.kernel, np.float64)
        assert [a.layout for a in sig[:3]] == ["A", "A", "A"]


def test_the_cells_take_strided_arrays_as_contiguous_copies():
    """The cells' loops are compiled for contiguous rows only (where they vectorise): a
    strided input is copied, a strided output written back, and the numbers are the
    reference's."""
    rng = np.random.default_rng(1)
    xg = rng.standard_normal((4, 12))[:, ::2]  # (N, 3 H): every other column
    h = rng.standard_normal((4, 6))[:, ::3]
    hg, expected_hg = (rng.standard_normal((4, 6)) for _ in "ab")
    expected_hg[...] = hg
    h_new, expected = np.empty((4, 4))[:, ::2], np.empty((4, 2))
    recurrent.gru_cell_forward(np, xg, expected_hg, h, None, expected, None)
    cpu_recurrent.gru_cell_forward(np, xg, hg, h, None, h_new, None)
    close(h_new, expected, np.float64, "h_new")
    close(hg, expected_hg, np.float64, "saved gates")
    (sig,) = signatures(cpu_recurrent.gru_forward_kernel, np.float64)
    assert {a.layout for a in sig} == {"C"}


# ------------------------------------------------------------------ convolution

CONV_CASES = [
    ((2, 3, 11), (4, 3, 3), (1,), (1,), (1,), 1),
    ((2, 4, 12), (6, 2, 4), (3,), (2,), (2,), 2),
    ((3, 2, 1), (5, 2, 1), (1,), (0,), (1,), 1),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 3, 8, 8), (3, 1, 3, 3), (2, 2), (1, 1), (1, 1), 3),
    ((2, 2, 6, 6), (3, 2, 5, 5), (1, 1), (4, 4), (1, 1), 1),
    ((2, 2, 10, 10), (2, 2, 3, 3), (3, 3), (0, 0), (2, 2), 1),
    ((3, 2, 5, 1), (2, 2, 2, 1), (1, 1), (1, 0), (2, 1), 1),
    ((2, 16, 7, 6), (5, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # views of the input
    ((2, 32, 6, 9), (4, 16, 3, 2), (1, 1), (0, 2), (2, 1), 2),
    ((3, 16, 11), (3, 16, 3), (1,), (2,), (2,), 1),
    ((2, 16, 7, 9), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # Winograd (below): odd output
    ((3, 17, 8, 8), (20, 17, 3, 3), (1, 1), (0, 0), (1, 1), 1),  # no padding, C != Co
    ((1, 16, 3, 3), (16, 16, 3, 3), (1, 1), (2, 2), (1, 1), 1),  # padding the kernel's reach
]
WINOGRAD_CASES = CONV_CASES[-3:]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_kernel_matches_reference(case, dtype, transposed, bias):
    x_shape, w_shape, *geometry = case
    rng = np.random.default_rng(0)
    x = strided(rng, x_shape, dtype, transposed)
    w = strided(rng, w_shape, dtype, transposed)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if bias else None
    out = conv.conv_forward(np, x, w, b, *geometry)
    close(cpu_conv.conv_forward(np, x, w, b, *geometry), out, dtype, "out")
    dout = strided(rng, out.shape, dtype, transposed)
    for needs in [(True, True, bias), (True, False, False), (False, True, False)]:
        expected = conv.conv_backward(np, dout, x, w, *geometry, needs)
        got = cpu_conv.conv_backward(np, dout, x, w, *geometry, needs)
        for name, g, e in zip(("dx", "dw", "db"), got, expected):
            assert (g is None) == (e is None), name
            if e is not None:
                close(g, e, dtype, name)


@pytest.mark.parametrize("case", WINOGRAD_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("bias", [True, False])
def test_winograd_kernel_matches_reference(monkeypatch, case, dtype, transposed, bias):
    """The Winograd cases again, with its thresholds lowered to 1 so that they take it."""
    monkeypatch.setattr(cpu_winograd, "MIN_CHANNELS", 1)
    monkeypatch.setattr(cpu_winograd, "MIN_POSITIONS", 1)
    test_conv_kernel_matches_reference(case, dtype, transposed, bias)


def test_winograd_takes_the_3x3_stride_1_convolutions_it_is_faster_on():
    def takes(x_shape, w_shape, stride=(1, 1), dilation=(1, 1), groups=1):
        padding = (1,) * len(stride)
        geometry = cpu_conv._Geometry(x_shape, w_shape, stride, padding, dilation, groups)
        return cpu_winograd.applies(geometry)

    assert takes((2, 32, 32, 32), (32, 32, 3, 3))
    assert takes((2, 64, 16, 16), (32, 64, 3, 3))
    assert not takes((2, 32, 32, 32), (32, 32, 3, 3), stride=(2, 2))
    assert not takes((2, 32, 32, 32), (32, 32, 3, 3), dilation=(1, 2))
    assert not takes((2, 32, 32, 32), (32, 16, 3, 3), groups=2)
    assert not takes((2, 32, 32, 32), (32, 32, 5, 5))
    assert not takes((2, 16, 32, 32), (32, 16, 3, 3))  # too few channels
    assert not takes((2, 128, 32, 32), (64, 128, 3, 3))  # too many
    assert not takes((2, 32, 8, 8), (32, 32, 3, 3))  # too few positions
    assert not takes((2, 32, 8), (32, 32, 3), stride=(1,), dilation=(1,))


@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9), st.integers(1, 9)),
    c_out=st.integers(1, 4),
    padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    bias=st.booleans(),
    max_tasks=st.sampled_from([1, 3, 8]),
)
def test_winograd_matches_reference_on_random_sizes(
    shape, c_out, padding, dtype, transposed, bias, max_tasks
):
    """F(2 x 2, 3 x 3) on any sizes (odd outputs, outputs of 1, size-1 axes, paddings up to the
    kernel's reach, batches in one run of samples or several): forward and every gradient
    equal the reference's. Its thresholds are lowered to 1, so small cases reach it."""
    N, C, H, W = shape
    assume(H + 2 * padding[0] >= 3 and W + 2 * padding[1] >= 3)
    rng = np.random.default_rng(sum(shape) + 7 * c_out + sum(padding))
    x = strided(rng, shape, dtype, transposed)
    w = strided(rng, (c_out, C, 3, 3), dtype, transposed)
    b = rng.standard_normal(c_out).astype(dtype) if bias else None
    settings = [(cpu_winograd, "MIN_CHANNELS", 1), (cpu_winograd, "MIN_POSITIONS", 1),
                (cpu_conv, "MAX_TASKS", max_tasks)]  # fmt: skip
    kernel_matches_reference(rng, x, w, b, ((1, 1), padding, (1, 1), 1), transposed, settings)


def kernel_matches_reference(rng, x, w, b, geometry, transposed: bool, settings):
    """The CPU conv kernel, with each (module, name, value) of ``settings`` patched in, gives
    the reference's output and every gradient (upstream gradient drawn from ``rng``)."""
    dtype, bias = x.dtype.type, b is not None
    out = conv.conv_forward(np, x, w, b, *geometry)
    dout = strided(rng, out.shape, dtype, transposed)
    expected = conv.conv_backward(np, dout, x, w, *geometry, (True, True, bias))
    with pytest.MonkeyPatch.context() as patch:
        for module, name, value in settings:
            patch.setattr(module, name, value)
        close(cpu_conv.conv_forward(np, x, w, b, *geometry), out, dtype, "out")
        got = cpu_conv.conv_backward(np, dout, x, w, *geometry, (True, True, bias))
    for name, g, e in zip(("dx", "dw", "db"), got, expected):
        assert (g is None) == (e is None), name
        if e is not None:
            close(g, e, dtype, name)


@pytest.mark.parametrize("max_tasks, scratch_bytes", [(1, 1 << 26), (2, 1 << 26), (8, 1)])
def test_conv_kernel_cuts_the_batch_into_tasks(monkeypatch, max_tasks, scratch_bytes):
    """A batch in one run of samples, in two, or in one because the scratch arrays would not
    fit twice: the result of the reference each time."""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((5, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    for geometry in [((1, 1), (1, 1), (1, 1), 1), ((2, 2), (1, 1), (1, 1), 1)]:
        out = conv.conv_forward(np, x, w, None, *geometry)
        dout = rng.standard_normal(out.shape)
        expected = conv.conv_backward(np, dout, x, w, *geometry, (True, True, True))
        monkeypatch.setattr(cpu_conv, "MAX_TASKS", max_tasks)
        monkeypatch.setattr(cpu_conv, "SCRATCH_BYTES", scratch_bytes)
        close(cpu_conv.conv_forward(np, x, w, None, *geometry), out, np.float64, "out")
        got = cpu_conv.conv_backward(np, dout, x, w, *geometry, (True, True, True))
        for g, e in zip(got, expected):
            close(g, e, np.float64, "grad")


@st.composite
def conv_cases(draw):
    """(x shape, weights shape, stride, padding, dilation, groups) with an output >= 1."""
    n = draw(st.sampled_from([1, 2]))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c_in, c_out = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    padding = tuple(draw(st.integers(0, 3)) for _ in range(n))
    size = tuple(
        max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, 4))
        for k, p, d in zip(kernel, padding, dilation)
    )
    x_shape = (draw(st.integers(1, 4)), c_in) + size
    return x_shape, (c_out, c_in // groups) + kernel, stride, padding, dilation, groups


@given(
    case=conv_cases(),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    bias=st.booleans(),
    max_tasks=st.sampled_from([1, 3, 8]),
    views_from=st.sampled_from([1, 16]),
)
def test_conv_kernel_matches_reference_on_random_geometries(
    case, dtype, transposed, bias, max_tasks, views_from
):
    """Random geometries (odd sizes, size-1 axes, strides, dilations, groups, paddings wider
        than the kernel's reach), batches in one run of samples or cut into several, the stride-1
    forward on views of the input (from one channel per group on) or on copied columns."""
    x_shape, w_shape, *geometry = case
    rng = np.random.default_rng(sum(x_shape) + 7 * sum(w_shape))
    x = strided(rng, x_shape, dtype, transposed)
    w = strided(rng, w_shape, dtype, transposed)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if bias else None
    settings = [(cpu_conv, "MAX_TASKS", max_tasks), (cpu_conv, "VIEWS_MIN_CHANNELS", views_from)]
    kernel_matches_reference(rng, x, w, b, geometry, transposed, settings)


# ------------------------------------------------------------------ recurrent cells


@given(
    cell=st.sampled_from(sorted(recurrent.CELLS)),
    steps=st.integers(1, 4),
    batch=st.integers(1, 4),
    hidden=st.integers(1, 7),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
)
def test_recurrent_kernels_match_reference(cell, steps, batch, hidden, dtype, transposed):
    rng = np.random.default_rng(steps * 100 + batch * 10 + hidden)
    G = recurrent.CELLS[cell][0]
    xg = strided(rng, (steps, batch, G * hidden), dtype, transposed)
    w = strided(rng, (G * hidden, hidden), dtype, transposed) * 0.5
    b = rng.standard_normal(G * hidden).astype(dtype)
    h0 = strided(rng, (batch, hidden), dtype, transposed)
    c0 = strided(rng, (batch, hidden), dtype, transposed) if cell == "lstm" else None
    results = []
    for use_kernels in (False, True):
        context = dispatch.references() if not use_kernels else pytest.MonkeyPatch.context()
        with context:
            states, saved = recurrent.recurrence_forward(np, cell, xg, w, b, h0, c0)
            hs, cs = (states, None) if c0 is None else (states[0], states[1])
            dhs = np.cos(np.arange(hs.size)).reshape(hs.shape).astype(dtype)
            dcs = None if cs is None else np.sin(np.arange(cs.size)).reshape(cs.shape).astype(dtype)
            grads = recurrent.recurrence_backward(np, cell, dhs, dcs, xg, w, h0, c0, hs, cs, saved)
        results.append([states] + [g for g in grads if g is not None])
    for got, expected in zip(results[1], results[0]):
        close(got, expected, dtype, cell)


def test_recurrent_kernels_are_what_the_cells_dispatch_to():
    x = np.zeros((2, 8), dtype=np.float32)
    chosen = dispatch.choose("lstm_cell", recurrent.CELLS["lstm"][1:], x)
    assert chosen == (cpu_recurrent.lstm_cell_forward, cpu_recurrent.lstm_cell_backward)


@given(
    steps=st.integers(1, 4),
    batch=st.integers(1, 4),
    hidden=st.integers(1, 9),
    dtype=st.sampled_from(DTYPES),
    transposed=st.booleans(),
    bias=st.booleans(),
    min_units=st.sampled_from([1, 64]),
    pool=st.booleans(),
    blocks=st.sampled_from([None, (1, 1), (2, 3)]),
)
def test_lstm_recurrence_kernel_matches_reference(
    steps, batch, hidden, dtype, transposed, bias, min_units, pool, blocks
):
    """The whole-sequence LSTM kernel against the reference loop with the reference cells: the
    units in one chunk or (chunks of one unit on) in 2 or 4, or without the shared pool, the
    steps in a loop with numpy's products; each step's products in one BLAS call, or in calls
    of 1 x 1 or 2 x 3 blocks (``blas.step_blocks``)."""
    rng = np.random.default_rng(steps * 100 + batch * 10 + hidden)
    xg = strided(rng, (steps, batch, 4 * hidden), dtype, transposed)
    w = strided(rng, (4 * hidden, hidden), dtype, transposed) * 0.5
    b = rng.standard_normal(4 * hidden).astype(dtype) if bias else None
    h0, c0 = (strided(rng, (batch, hidden), dtype, transposed) for _ in "hc")
    dhs = strided(rng, (steps, batch, hidden), dtype, transposed)
    dcs = strided(rng, (steps, batch, hidden), dtype, transposed)
    with dispatch.references():
        states, saved = recurrent.recurrence_forward(np, "lstm", xg, w, b, h0, c0)
        expected = recurrent.recurrence_backward(
            np, "lstm", dhs, dcs, xg, w, h0, c0, states[0], states[1], saved
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpu_recurrent, "CHUNK_UNITS", {4: min_units, 2: min_units})
        patch.setattr(cpu_recurrent, "uses_one_pool", lambda: pool)
        if blocks is not None:
            patch.setattr(cpu_blas, "step_blocks", lambda rows, depth, width, itemsize: blocks)
        got_states, got_saved = cpu_recurrent.lstm_recurrence_forward(np, "lstm", xg, w, b, h0, c0)
        close(got_states, states, dtype, "states")
        close(got_saved, saved, dtype, "saved gates")
        got = cpu_recurrent.lstm_recurrence_backward(
            np, "lstm", dhs, dcs, xg, w, h0, c0, got_states[0], got_states[1], got_saved
        )
    for name, g, e in zip(("dxg", "dw_hh", "db_hh", "dh0", "dc0"), got, expected):
        close(g, e, dtype, name)


@pytest.mark.parametrize(
    "architecture, rows, depth, columns, expected",
    [
        ("SkylakeX", 32, 256, 512, (16, 128)),  # 16 x 128 x 256 <= 100^3 < 16 x 256 x 256
        ("SapphireRapids", 32, 512, 256, (16, 64)),
        ("SkylakeX", 8, 512, 512, (8, 128)),  # fewer rows than a block's
        ("Cooperlake", 4, 16, 64, (4, 64)),  # the whole product is small: one call
        ("SkylakeX", 32, 2048, 64, (32, 64)),  # 16 x 32 x 2048 > 100^3 already: one call
        ("SkylakeX", 32, 1024, 1024, (32, 1024)),  # w is 4 MiB, beyond the L2 cache: one call
        ("Haswell", 32, 256, 512, (32, 512)),  # no small-matrix kernels
        (None, 32, 256, 512, (32, 512)),  # numpy has no OpenBLAS of its own
        ("SkylakeX", 0, 256, 512, (1, 512)),  # an empty batch: one (empty) call
    ],
)
def test_step_products_take_blocks_the_small_matrix_kernels_take(
    monkeypatch, architecture, rows, depth, columns, expected
):
    cpu_blas.library()
    monkeypatch.setitem(cpu_blas._bound, "architecture", architecture)
    assert cpu_blas.step_blocks(rows, depth, columns) == expected


@pytest.mark.parametrize(
    "architecture, units, itemsize, expected",
    [
        ("SkylakeX", 100, 4, 1),  # 2 of 50 would be fewer than 64 units each: one chunk
        ("SkylakeX", 256, 4, 2),  # 2 chunks of 128, each's weights 512 KiB
        ("SkylakeX", 512, 4, 4),  # 4 of 128: 1 MiB each
        ("SkylakeX", 768, 4, 16),  # 4 of 192 (2.25 MiB), 8 of 96 (1.1 MiB), 16 of 48
        ("SkylakeX", 1024, 4, 16),
        ("SkylakeX", 1024, 8, 32),  # float64: twice the bytes
        ("SkylakeX", 1000, 4, 8),  # 16 does not divide 1000: 8 chunks, though too large
        ("SkylakeX", 2048, 4, 4),  # a call 2048 deep is too large for the small kernels
        ("Haswell", 1024, 4, 4),  # no small-matrix kernels: 4 of 128 or more
    ],
)
def test_lstm_chunks_fit_the_small_matrix_kernels(
    monkeypatch, architecture, units, itemsize, expected
):
    cpu_blas.library()
    monkeypatch.setitem(cpu_blas._bound, "architecture", architecture)
    assert cpu_recurrent.chunks(units, itemsize) == expected


@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5), (2, 3, 33)])
@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.float64])
def test_aligned_arrays_start_on_a_cache_line(shape, dtype):
    for _ in range(4):  # numpy's own alignment varies from one array to the next
        a = cpu_arrays.aligned_empty(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
        assert a.size == 0 or a.ctypes.data % 64 == 0  # an empty one has no data
        a[...] = 1  # writable
        assert a.sum() == a.size


def test_lstm_recurrence_does_not_depend_on_the_thread_count():
    """512 units in 4 chunks: the same bits on one thread and on two."""
    rng = np.random.default_rng(5)
    T, N, H = 3, 4, 512
    assert cpu_recurrent.chunks(H) == 4
    xg, w = rng.standard_normal((T, N, 4 * H)), rng.standard_normal((4 * H, H)) * 0.05
    h0, c0 = rng.standard_normal((N, H)), rng.standard_normal((N, H))
    dhs, dcs = rng.standard_normal((T, N, H)), rng.standard_normal((T, N, H))
    results, previous = [], compile_module.thread_count()
    for threads in (1, 2):
        compile_module.set_threads(threads)
        try:
            states, gates = cpu_recurrent.lstm_recurrence_forward(np, "lstm", xg, w, None, h0, c0)
            grads = cpu_recurrent.lstm_recurrence_backward(
                np, "lstm", dhs, dcs, xg, w, h0, c0, states[0], states[1], gates
            )
        finally:
            compile_module.set_threads(previous)
        results.append([states, gates, *grads])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


def test_the_lstm_layer_runs_the_sequence_kernel():
    x = np.zeros((2, 8), dtype=np.float32)
    chosen = dispatch.choose("lstm_recurrence", None, x)
    assert chosen == (cpu_recurrent.lstm_recurrence_forward, cpu_recurrent.lstm_recurrence_backward)

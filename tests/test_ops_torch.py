"""Forward values and gradients of every op against PyTorch, in float32 and float64.

One table: (name, our function, torch function, input generators). Each case runs both
libraries on the same random inputs, back-propagates the same random output gradient and
compares outputs and input gradients. Skips cleanly without torch.
"""

import warnings
import zlib

import numpy as np
import pytest

from tricycle import binary, ops, reduce, unary
from tricycle.einsum import Einsum
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def normal(*shape):
    return lambda rng: rng.normal(size=shape)


def positive(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape)


def nonzero(*shape):
    return lambda rng: rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


_masks = np.random.default_rng(7)
MASK = _masks.random((3, 4)) > 0.5
ROWS = np.array([True, False, True])
COND = _masks.random((3, 4)) > 0.5
INDEX = np.array([0, 2, 0, 1, 0])


def einsum_case(subscript, *generators):
    return (
        f"einsum {subscript}",
        lambda *ts: Einsum(subscript)(*ts),
        lambda *ts: torch.einsum(subscript, *ts),
        list(generators),
    )


CASES = [
    # elementwise, two tensors (with broadcasting)
    ("add", lambda a, b: a + b, lambda a, b: a + b, [normal(3, 4), normal(4)]),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [normal(2, 1, 4), normal(3, 1)]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [normal(3, 4), normal(3, 1)]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [normal(3, 4), nonzero(4)]),
    ("pow", lambda a, b: a**b, lambda a, b: a**b, [positive(3, 4), normal(3, 4)]),
    ("maximum", binary.maximum, torch.maximum, [normal(3, 4), normal(4)]),
    ("minimum", binary.minimum, torch.minimum, [normal(3, 4), normal(3, 1)]),
    # a tensor and a scalar
    ("add scalar", lambda a: a + 1.5, lambda a: a + 1.5, [normal(3, 4)]),
    ("radd scalar", lambda a: 1.5 + a, lambda a: 1.5 + a, [normal(3, 4)]),
    ("sub scalar", lambda a: a - 0.5, lambda a: a - 0.5, [normal(3, 4)]),
    ("rsub scalar", lambda a: 0.5 - a, lambda a: 0.5 - a, [normal(3, 4)]),
    ("mul scalar", lambda a: a * 3, lambda a: a * 3, [normal(3, 4)]),
    ("rmul scalar", lambda a: -2.5 * a, lambda a: -2.5 * a, [normal(3, 4)]),
    ("div scalar", lambda a: a / 4.0, lambda a: a / 4.0, [normal(3, 4)]),
    ("rdiv scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, [nonzero(3, 4)]),
    ("pow scalar", lambda a: a**3, lambda a: a**3, [normal(3, 4)]),
    ("pow square", lambda a: a**2, lambda a: a**2, [normal(3, 4)]),
    ("pow fractional", lambda a: a**0.5, lambda a: a**0.5, [positive(3, 4)]),
    ("pow negative", lambda a: a**-1.5, lambda a: a**-1.5, [positive(3, 4)]),
    ("pow zero", lambda a: a**0, lambda a: a**0, [normal(3, 4)]),
    ("rpow scalar", lambda a: 2.0**a, lambda a: 2.0**a, [normal(3, 4)]),
    (
        "maximum scalar",
        lambda a: unary.maximum_scalar(a, 0.3),
        lambda a: torch.clamp(a, min=0.3),
        [normal(3, 4)],
    ),
    (
        "minimum scalar",
        lambda a: unary.minimum_scalar(a, 0.3),
        lambda a: torch.clamp(a, max=0.3),
        [normal(3, 4)],
    ),
    ("clip", lambda a: a.clip(-0.5, 0.5), lambda a: torch.clamp(a, -0.5, 0.5), [normal(3, 4)]),
    ("clip low", lambda a: a.clip(-0.5, None), lambda a: torch.clamp(a, min=-0.5), [normal(3, 4)]),
    # elementwise, one tensor
    ("neg", lambda a: -a, lambda a: -a, [normal(3, 4)]),
    ("exp", unary.exp, torch.exp, [normal(3, 4)]),
    ("log", unary.log, torch.log, [positive(3, 4)]),
    ("sqrt", unary.sqrt, torch.sqrt, [positive(3, 4)]),
    ("abs", abs, torch.abs, [normal(3, 4)]),
    ("sin", unary.sin, torch.sin, [normal(3, 4)]),
    ("cos", unary.cos, torch.cos, [normal(3, 4)]),
    ("tanh", unary.tanh, torch.tanh, [lambda rng: rng.normal(scale=4, size=(3, 4))]),
    ("sigmoid", unary.sigmoid, torch.sigmoid, [lambda rng: rng.normal(scale=8, size=(3, 4))]),
    # reductions
    ("sum", lambda a: a.sum(), lambda a: a.sum(), [normal(3, 4)]),
    ("sum axis", lambda a: a.sum(axis=1), lambda a: a.sum(dim=1), [normal(2, 3, 4)]),
    (
        "sum axes keepdims",
        lambda a: a.sum(axis=(0, 2), keepdims=True),
        lambda a: a.sum(dim=(0, 2), keepdim=True),
        [normal(2, 3, 4)],
    ),
    ("mean", lambda a: a.mean(), lambda a: a.mean(), [normal(3, 4)]),
    ("mean axis", lambda a: a.mean(axis=-1), lambda a: a.mean(dim=-1), [normal(2, 3, 4)]),
    ("max", lambda a: a.max(), lambda a: a.amax(), [normal(3, 4)]),
    ("max axis", lambda a: a.max(axis=0), lambda a: a.amax(dim=0), [normal(3, 4)]),
    (
        "min keepdims",
        lambda a: a.min(axis=1, keepdims=True),
        lambda a: a.amin(dim=1, keepdim=True),
        [normal(3, 4)],
    ),
    ("var", lambda a: a.var(), lambda a: a.var(correction=0), [normal(3, 4)]),
    (
        "var axis ddof=1",
        lambda a: reduce.var(a, axis=0, ddof=1),
        lambda a: a.var(dim=0, correction=1),
        [normal(5, 3)],
    ),
    # shapes
    ("reshape", lambda a: a.reshape(4, 6), lambda a: a.reshape(4, 6), [normal(2, 3, 4)]),
    ("reshape -1", lambda a: a.reshape(-1), lambda a: a.reshape(-1), [normal(2, 3, 4)]),
    (
        "transpose",
        lambda a: a.transpose(2, 0, 1),
        lambda a: a.permute(2, 0, 1),
        [normal(2, 3, 4)],
    ),
    ("T", lambda a: a.T, lambda a: a.T, [normal(3, 4)]),
    ("swapaxes", lambda a: a.swapaxes(0, 2), lambda a: a.swapaxes(0, 2), [normal(2, 3, 4)]),
    ("expand_dims", lambda a: a.expand_dims(1), lambda a: a.unsqueeze(1), [normal(3, 4)]),
    ("squeeze", lambda a: a.squeeze(1), lambda a: a.squeeze(1), [normal(3, 1, 4)]),
    (
        "split",
        lambda a: ops.split(a, 2, axis=1)[1],
        lambda a: torch.split(a, 2, dim=1)[1],
        [normal(3, 4)],
    ),
    (
        "concatenate",
        lambda a, b: ops.concatenate([a, b], axis=1),
        lambda a, b: torch.cat([a, b], dim=1),
        [normal(3, 2), normal(3, 4)],
    ),
    (
        "stack",
        lambda a, b: ops.stack([a, b], axis=-1),
        lambda a, b: torch.stack([a, b], dim=-1),
        [normal(3, 4), normal(3, 4)],
    ),
    (
        "repeat",
        lambda a: a.repeat(3, axis=1),
        lambda a: a.repeat_interleave(3, dim=1),
        [normal(3, 4)],
    ),
    # indexing
    ("getitem slice", lambda a: a[1:, ::2], lambda a: a[1:, ::2], [normal(3, 4)]),
    ("getitem int", lambda a: a[1, 2], lambda a: a[1, 2], [normal(3, 4)]),
    (
        "getitem repeated indices",
        lambda a: a[INDEX % 3],
        lambda a: a[torch.from_numpy(INDEX % 3)],
        [normal(3, 4)],
    ),
    (
        "getitem two index arrays",
        lambda a: a[INDEX % 3, INDEX],
        lambda a: a[torch.from_numpy(INDEX % 3), torch.from_numpy(INDEX)],
        [normal(3, 4)],
    ),
    ("getitem mask", lambda a: a[MASK], lambda a: a[torch.from_numpy(MASK)], [normal(3, 4)]),
    ("getitem rows", lambda a: a[ROWS], lambda a: a[torch.from_numpy(ROWS)], [normal(3, 4)]),
    (
        "where",
        lambda a, b: ops.where(COND, a, b),
        lambda a, b: torch.where(torch.from_numpy(COND), a, b),
        [normal(3, 4), normal(4)],
    ),
    (
        "masked_fill",
        lambda a: a.masked_fill(MASK, -1.5),
        lambda a: a.masked_fill(torch.from_numpy(MASK), -1.5),
        [normal(3, 4)],
    ),
    # einsum and matmul
    einsum_case("ij->ji", normal(3, 4)),
    einsum_case("ij->i", normal(3, 4)),
    einsum_case("ij,jk->ik", normal(3, 4), normal(4, 5)),
    einsum_case("ij,jk->ki", normal(3, 4), normal(4, 5)),
    einsum_case("...i,ij->...j", normal(2, 3, 4), normal(4, 5)),
    einsum_case("...i,...j->ij", normal(2, 3, 4), normal(2, 3, 5)),
    einsum_case("bhtd,bhsd->bhts", normal(2, 2, 3, 4), normal(2, 2, 5, 4)),
    einsum_case("zxTb,bW->zxTW", normal(2, 2, 3, 4), normal(4, 5)),
    einsum_case("i,j->ij", normal(3), normal(4)),
    einsum_case("ij,jk,kl->il", normal(2, 3), normal(3, 4), normal(4, 5)),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [normal(2, 3, 4), normal(4, 5)]),
    (
        "matmul batched",
        lambda a, b: a @ b,
        lambda a, b: a @ b,
        [normal(2, 1, 3, 4), normal(3, 4, 2)],
    ),
    ("matmul vector", lambda a, b: a @ b, lambda a, b: a @ b, [normal(3, 4), normal(4)]),
    ("matmul dot", lambda a, b: a @ b, lambda a, b: a @ b, [normal(4), normal(4)]),
]

TOLERANCES = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-12, "atol": 1e-12}}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_forward_and_gradients_match_torch(case, dtype):
    name, ours, theirs, generators = case
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [generator(rng).astype(dtype) for generator in generators]
    tensors = [Tensor(a.copy()) for a in arrays]
    torch_tensors = [torch.tensor(a, requires_grad=True) for a in arrays]

    out = ours(*tensors)
    expected = theirs(*torch_tensors)
    assert out.dtype == np.dtype(dtype), f"{name} changed the dtype to {out.dtype}"
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), **TOLERANCES[dtype])

    weights = rng.normal(size=out.shape).astype(dtype)
    out.backward(weights)
    (expected * torch.from_numpy(weights)).sum().backward()
    for i, (tensor, torch_tensor) in enumerate(zip(tensors, torch_tensors)):
        assert tensor.grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(
            tensor.grad.array,
            torch_tensor.grad.numpy(),
            err_msg=f"{name}: gradient of input {i}",
            **TOLERANCES[dtype],
        )


def test_ties_split_like_torch():
    """maximum/minimum and amax/amin split the gradient evenly between tied values."""
    values = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x, tx = Tensor(values.copy()), torch.tensor(values, requires_grad=True)
    x.max(axis=1).sum().backward()
    tx.amax(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.array, tx.grad.numpy())

    a, ta = Tensor(values.copy()), torch.tensor(values, requires_grad=True)
    binary.maximum(a, a).sum().backward()
    torch.maximum(ta, ta).sum().backward()
    np.testing.assert_allclose(a.grad.array, ta.grad.numpy())


def test_pow_at_zero_matches_torch():
    base = np.array([0.0, 0.0, 2.0, 0.0])
    exponent = np.array([0.0, 2.0, 0.0, 1.0])
    a, b = Tensor(base.copy()), Tensor(exponent.copy())
    ta = torch.tensor(base, requires_grad=True)
    tb = torch.tensor(exponent, requires_grad=True)
    (a**b).sum().backward()
    (ta**tb).sum().backward()
    np.testing.assert_allclose(a.grad.array, ta.grad.numpy())
    np.testing.assert_allclose(b.grad.array, tb.grad.numpy())


def test_log_at_zero_and_below_matches_torch_without_warnings():
    """word_language_model's causal mask ``log(tril(ones))``: -inf above the diagonal, with
    no warning (torch gives none); NaN below 0, and the gradient 1 / x (inf at 0), as torch's."""
    values = np.array([0.0, 1.0, -1.0, 2.0])
    x, tx = Tensor(values.copy()), torch.tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = unary.log(x)
        out.backward(np.ones(4))
    tout = torch.log(tx)
    tout.backward(torch.ones(4))
    np.testing.assert_array_equal(out.array, tout.detach().numpy())
    np.testing.assert_array_equal(x.grad.array, tx.grad.numpy())

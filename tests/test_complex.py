"""Complex tensors (tricycle.complex_tensor) against torch's: creation and dtypes, the
complex-aware ops' values and gradients (torch's convention: for a real loss, dL/da + i dL/db),
and the refusal of ops that are not complex-aware."""

import numpy as np
import pytest

import tricycle
from tricycle import complex_tensor as C
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rng = np.random.default_rng(1)


def _values(shape, is_complex=True):
    values = rng.standard_normal(shape)
    return values + 1j * rng.standard_normal(shape) if is_complex else values


def _check(program, *arrays):
    """``program`` run on tricycle's and torch's tensors of ``arrays`` (a complex or real
    result, read by a real loss): values and every input's gradient equal."""
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = program(ours, C), program(theirs, torch)
    np.testing.assert_allclose(out.array, expected.detach().resolve_conj().numpy(), rtol=1e-10)
    weights = _values(expected.shape, False)
    (
        C.abs(out) * Tensor(weights) if out.dtype.kind == "c" else out * Tensor(weights)
    ).sum().backward()
    (expected.abs() * torch.tensor(weights)).sum().backward() if expected.is_complex() else (
        expected * torch.tensor(weights)).sum().backward()  # fmt: skip
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.array, t.grad.resolve_conj().numpy(), rtol=1e-9)


PROGRAMS = {
    "arithmetic": (
        lambda v, m: v[0] * v[1] - v[0] / v[1] + 2 * v[0] - (1 - 2j) * v[1],
        (3, 4),
        (4,),
    ),
    "real operand": (lambda v, m: v[0] * v[1] + v[1] / v[0] - v[1] + v[0], (2, 3), (3,)),
    "matmul": (lambda v, m: v[0] @ v[1], (3, 4), (4, 2)),
    "einsum": (lambda v, m: m.einsum("ij,jk->ik", v[0], v[1]), (2, 3), (3, 2)),
    "reductions": (lambda v, m: v[0].sum(dim=0) + v[0].mean(dim=0) + v[0].sum(), (3, 4)),
    "exp, conj": (lambda v, m: v[0].exp() * v[0].conj(), (5,)),
    "abs, angle": (lambda v, m: v[0].abs() + v[0].angle() * 2, (6,)),
    "real, imag": (lambda v, m: v[0].real * 3 - v[0].imag ** 2, (6,)),
    "shapes": (lambda v, m: v[0].reshape(3, 4).permute(1, 0)[1:, ::2].transpose(0, 1), (12,)),
    "cat, stack": (lambda v, m: m.cat([v[0], m.stack([v[1], v[1]])]), (1, 3), (3,)),
    "view_as_real": (lambda v, m: m.view_as_real(v[0]) * 2, (2, 3)),
    "view_as_complex": (lambda v, m: m.view_as_complex(v[0]) * 1j, (2, 3, 2)),
    "complex, polar": (lambda v, m: m.complex(v[0], v[1]) + m.polar(v[0].abs(), v[1]), (3,), (3,)),
}
REAL_INPUTS = {
    "real operand": (True, False),
    "view_as_complex": (False,),
    "complex, polar": (False, False),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_complex_ops_and_their_gradients_are_torchs(name):
    program, *shapes = PROGRAMS[name]
    kinds = REAL_INPUTS.get(name, (True,) * len(shapes))
    _check(program, *[_values(s, k) for s, k in zip(shapes, kinds)])


def test_creation_and_dtypes_are_torchs():
    assert tricycle.tensor([1 + 2j]).dtype == np.complex64 == tricycle.cfloat == tricycle.complex64
    assert tricycle.tensor(np.array([1j])).dtype == tricycle.cdouble == tricycle.complex128
    z = tricycle.complex(tricycle.tensor([1.0]), tricycle.tensor([2.0]))
    assert z.is_complex() and tricycle.is_complex(z) and not z.is_floating_point()
    assert z.dtype == np.complex64 and z.real.dtype == np.float32
    with pytest.raises(RuntimeError, match="imag"):
        C.imag(tricycle.tensor([1.0]))


def test_ops_that_are_not_complex_aware_refuse():
    z = Tensor(_values((3,)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="complex"):  # a RuntimeError, as torch's
        tricycle.relu(z)
    with pytest.raises(NotImplementedError, match="softmax: does not take complex"):
        z.softmax(0)
    with pytest.raises(NotImplementedError, match="Softmax: does not take complex"):
        tricycle.softmax(z, 0)
    with pytest.raises(NotImplementedError, match="order"):
        z < z  # noqa: B015

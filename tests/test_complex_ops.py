"""Complex tensors where torch takes them, against torch (values and gradients): the shape ops
and indexing (of both parts), ``F.pad``, setitem into an op's output, the products (``mm``,
``dot``/``vdot``/``inner``/``outer``, ``F.linear``), the reductions (``prod``, ``cumsum``,
``var``/``std``, ``norm``/``dist``/``matrix_norm``), the circular and hyperbolic functions and
``rsqrt``; the refusals of the ops that do not take them: NotImplementedError (a RuntimeError,
torch's kind), naming the op. ``linalg.det``/``svdvals`` of complex matrices are refused."""

import numpy as np
import pytest

import tricycle
from tests.test_complex_more import _check, _values
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def _fn(module):
    return torch.nn.functional if module is torch else tricycle.nn.functional


SHAPES = {  # name: (program(tensors, module), shapes of the complex inputs)
    "mT, transpose": (lambda v, m: v[0].mT + m.transpose(v[0], 0, 1), (3, 3)),
    "diag, diagonal, trace": (
        lambda v, m: m.diag(v[0]) * m.trace(v[0]) + m.diagonal(v[0], 1).sum(),
        (3, 3),
    ),
    "diag of a vector": (lambda v, m: m.diag(v[0], 1), (3,)),
    "roll": (lambda v, m: m.roll(v[0], 1, 0) + v[0].roll(-1, 1), (2, 3)),
    "expand, tile": (lambda v, m: v[0].expand(2, 3) * 2 + m.tile(v[0], (2, 1)), (1, 3)),
    "repeat_interleave": (lambda v, m: m.repeat_interleave(v[0], 2, dim=1), (2, 3)),
    "chunk, split, unbind": (
        lambda v, m: (
            m.chunk(v[0], 2, 1)[1] + v[0].split([1, 3], 1)[1][:, :2] + m.unbind(v[0], 1)[0][:, None]
        ),
        (2, 4),
    ),
    "index_select, gather": (
        lambda v, m: (
            m.index_select(v[0], 0, m.tensor([2, 0]))
            + m.gather(v[0], 1, m.tensor([[0, 1, 1], [2, 2, 0], [1, 0, 2]]))[:2]
        ),
        (3, 3),
    ),
    "flip, narrow, squeeze, unsqueeze": (
        lambda v, m: m.unsqueeze(m.squeeze(m.flip(m.narrow(v[0], 1, 1, 2), [1]), 0), 1),
        (1, 3),
    ),
    "tril, triu": (lambda v, m: m.tril(v[0]) * 2 + v[0].triu(1), (3, 3)),
    "movedim, flatten": (lambda v, m: m.flatten(m.movedim(v[0], 0, 2), 1), (2, 3, 2)),
    "cumsum": (lambda v, m: m.cumsum(v[0], 1) + v[0].cumsum(0), (2, 3)),
    "F.pad constant, reflect": (
        lambda v, m: _fn(m).pad(v[0], (1, 2), value=3.0) + _fn(m).pad(v[0], (1, 2), "reflect"),
        (2, 4),
    ),
}
PRODUCTS = {
    "mm, bmm": (lambda v, m: m.mm(v[0], v[1]) + m.bmm(v[0][None], v[1][None])[0], (2, 3), (3, 2)),
    "dot, vdot": (lambda v, m: m.dot(v[0], v[1]) * m.vdot(v[0], v[1]) + v[0].dot(v[1]), (3,), (3,)),
    "inner, outer": (lambda v, m: m.outer(v[0], v[1]) * m.inner(v[0], v[1][:3]), (3,), (4,)),
    "F.linear": (lambda v, m: _fn(m).linear(v[0], v[1], v[2]), (2, 3), (4, 3), (4,)),
}
FUNCTIONS = {
    name: (lambda v, m, name=name: getattr(m, name)(v[0]) + getattr(v[0], name)() * 0.5, (2, 3))
    for name in ("sin", "cos", "tanh", "sinh", "cosh", "rsqrt")
}
REDUCTIONS = {
    "prod": (lambda v, m: m.prod(v[0], 1) + v[0].prod(0, keepdim=True).sum() + v[0].prod(), (3, 5)),
    "var, std": (
        lambda v, m: m.var(v[0], dim=1) + v[0].std(0).sum() + m.std(v[0], correction=0),
        (3, 4),
    ),
    "norm, dist": (lambda v, m: m.norm(v[0]) + v[0].norm(1, 1) + m.dist(v[0], v[0] * 2, 3), (2, 3)),
    "matrix_norm": (
        lambda v, m: (
            m.linalg.matrix_norm(v[0])
            + m.linalg.matrix_norm(v[0], 1)
            + m.linalg.matrix_norm(v[0], float("-inf"))
        ),
        (2, 3, 3),
    ),
}


@pytest.mark.parametrize("case", [*SHAPES, *PRODUCTS, *FUNCTIONS, *REDUCTIONS])
def test_complex_ops_are_torchs(case):
    program, *shapes = {**SHAPES, **PRODUCTS, **FUNCTIONS, **REDUCTIONS}[case]
    _check(program, *(_values(shape) for shape in shapes))


def test_tanh_of_a_large_real_part_is_finite():
    z = Tensor(np.array([30 + 1j, -30 + 0.5j, 400 + 2j]), requires_grad=True)
    out = tricycle.tanh(z)
    expected = torch.tanh(torch.tensor(z.array))
    np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-12)
    out.abs().sum().backward()
    assert np.isfinite(z.grad.array).all()


def test_setitem_into_an_op_output_is_torchs():
    def program(v, m):
        out = v[0] * 2
        out[0, 1] = v[1][0]  # a complex value
        out[1] = m.tensor(np.array([5.0, 6.0, 7.0]))  # a real one: imaginary part 0
        return out

    _check(program, _values((2, 3)), _values((2,)))


def test_refusals_are_not_implemented_naming_the_op():
    z = Tensor(_values((3, 3)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="softmax: does not take complex"):
        z.softmax(0)  # a real op that met the complex tensor's array
    with pytest.raises(RuntimeError, match="max: does not take complex"):
        z.max()  # NotImplementedError is a RuntimeError, as torch's "not implemented for"
    with pytest.raises(NotImplementedError, match="order"):
        z > z  # noqa: B015
    # (det, svd, inv, solve, solve_triangular, pinv and matrix_norm take it:
    # tests/test_complex_linalg*.py, tests/test_second_order_complex.py)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_complex_ops_on_a_gpu_are_the_hosts():
    a, b = _values((3, 4)), _values((4,))
    results = []
    for device in ("cpu", "cuda"):
        x = tricycle.tensor(a, device=device, requires_grad=True)
        y = tricycle.tensor(b, device=device, requires_grad=True)
        out = tricycle.roll(x, 1, 0) * tricycle.sin(x) + tricycle.tanh(x).cumsum(1)
        out = tricycle.nn.functional.pad(out, (1, 1)) * 1.0
        out[0, 1] = y[0]
        reduced = (
            out.prod(1).sum() + tricycle.dot(y, y) + x.var(dim=0).sum() + tricycle.trace(x[:, :3])
        )
        loss = reduced.abs() + tricycle.linalg.matrix_norm(x, 1)
        loss.backward()
        results.append([backend.to_host_array(t) for t in (loss.array, x.grad.array, y.grad.array)])
    for host, gpu in zip(*results):
        np.testing.assert_allclose(gpu, host, rtol=1e-9, atol=1e-9)

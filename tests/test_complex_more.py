"""Complex tensors, the rest, against torch: the top-level functions (``tricycle.cat``,
``exp``, ``where`` ...) as the methods, casts to and from complex, ``randn(dtype=cfloat)``,
log/pow/sqrt/reciprocal/sigmoid, ``linalg.vector_norm``, comparisons of complex tensors,
a complex ``nn.Parameter`` stepped by SGD (Adafactor refused), the refusal of an op that is not
complex-aware even where its output is real, and the GPU (skipped without one)."""

import warnings

import numpy as np
import pytest

import tricycle
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rng = np.random.default_rng(3)


def _values(shape, is_complex=True):
    values = rng.standard_normal(shape)
    return values + 1j * rng.standard_normal(shape) if is_complex else values


def _read(out, module):
    """A real loss that reads every part of ``out``: weighted magnitudes (or values)."""
    weights = np.linspace(0.5, 1.5, int(np.prod(out.shape))).reshape(out.shape)
    weights = module.tensor(weights) if module is torch else Tensor(weights)
    is_complex = out.is_complex() if module is torch else out.dtype.kind == "c"
    return ((out.abs() if is_complex else out) * weights).sum()


def _check(program, *arrays, rtol=1e-9):
    """``program(tensors, module)`` with tricycle and with torch: values and gradients."""
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = program(ours, tricycle), program(theirs, torch)
    np.testing.assert_allclose(out.array, expected.detach().resolve_conj().numpy(), rtol=rtol)
    _read(out, tricycle).backward()
    _read(expected, torch).backward()
    for o, t in zip(ours, theirs):
        if t.grad is None:  # read only by a comparison
            assert o.grad is None
            continue
        np.testing.assert_allclose(o.grad.array, t.grad.resolve_conj().numpy(), rtol=rtol)


TOP_LEVEL = {
    "cat, stack": (lambda v, m: m.cat([v[0], m.stack([v[1], v[0][0]])]), (1, 3), (3,)),
    "concatenate, real": (lambda v, m: m.concatenate([v[0], v[1]], 1), (2, 2), (2, 3)),
    "einsum": (lambda v, m: m.einsum("ij,jk->ik", v[0], v[1]), (2, 3), (3, 2)),
    "einsum, a list": (lambda v, m: m.einsum("ij->j", [v[0]]), (2, 3)),
    "matmul": (lambda v, m: m.matmul(v[0], v[1]), (3, 4), (4,)),
    "exp, abs, angle": (lambda v, m: m.exp(v[0]) * m.abs(v[0]) + m.angle(v[0]), (5,)),
    "conj, real, imag": (lambda v, m: m.conj(v[0]) * m.real(v[0]) - m.imag(v[0]), (5,)),
    "sum, mean": (lambda v, m: m.sum(v[0], 0) + m.mean(v[0], dim=0), (3, 4)),
    "where": (lambda v, m: m.where(v[1] > 0, v[0], m.conj(v[0])), (2, 3), (2, 3)),
    "where, a number": (lambda v, m: m.where(v[0].real > 0, v[0], 2.0), (2, 3)),
    "reshape, flatten": (lambda v, m: m.flatten(m.reshape(v[0], (3, 2)), 0), (2, 3)),
    "neg, clone, add": (lambda v, m: m.add(m.neg(v[0]), m.clone(v[0]) * 1j, alpha=2), (4,)),
    "sub, mul, div": (
        lambda v, m: m.div(m.mul(m.sub(v[0], v[1], alpha=3), v[0]), v[1]),
        (4,),
        (4,),
    ),  # fmt: skip
    "log, sqrt": (lambda v, m: m.log(v[0]) + m.sqrt(v[0]), (6,)),
    "pow": (lambda v, m: v[0] ** 2.5 + m.pow(v[0], 2) + v[0].pow(-1.0), (6,)),
    "reciprocal, sigmoid": (lambda v, m: m.reciprocal(v[0]) + m.sigmoid(v[0]), (6,)),
    "vector_norm": (lambda v, m: m.linalg.vector_norm(v[0], 3, dim=1), (2, 4)),
    "norm": (lambda v, m: m.linalg.norm(v[0]) * v[0], (2, 4)),
    "to a real dtype": (lambda v, m: v[0].to(m.float64) * 2 + v[0].double(), (4,)),
    "to complex": (lambda v, m: v[0].to(m.cdouble) * (1 + 2j), (4,)),
}
REAL_INPUTS = {
    "concatenate, real": (True, False),
    "where": (True, False),
    "to complex": (False,),
}


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_top_level_functions_take_complex_tensors_as_torchs(name):
    program, *shapes = TOP_LEVEL[name]
    kinds = REAL_INPUTS.get(name, (True,) * len(shapes))
    with warnings.catch_warnings():  # the complex-to-real cast warns, as torch's
        warnings.simplefilter("ignore", UserWarning)
        _check(program, *[_values(s, k) for s, k in zip(shapes, kinds)])


def test_real_tensors_take_the_real_functions():
    x = tricycle.tensor([-1.0, 4.0], requires_grad=True)
    assert tricycle.abs(x).name == "abs" and tricycle.exp(x).name == "exp"
    np.testing.assert_allclose(tricycle.sqrt(tricycle.tensor([4.0])).array, [2.0])
    np.testing.assert_allclose(tricycle.angle(x).array, [np.pi, 0], rtol=1e-6)
    np.testing.assert_allclose(tricycle.where(x > 0, x, 0.0).array, [0.0, 4.0])
    assert tricycle.real(x) is x and tricycle.cat([x, x]).shape == (4,)
    with pytest.raises(RuntimeError, match="imag"):
        tricycle.imag(x)


def test_casts_are_torchs():
    values = np.array([1 + 2j, -3 - 0.5j])
    z = tricycle.tensor(values, requires_grad=True)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        x = z.to(tricycle.float32)
    assert x.dtype == np.float32 and x.requires_grad
    np.testing.assert_allclose(x.array, [1, -3])
    x.sum().backward()
    np.testing.assert_allclose(z.grad.array, [1, 1])  # torch's: real, as a complex gradient
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning neither
        from_numpy = tricycle.tensor(values, dtype=tricycle.float32)
    assert from_numpy.dtype == np.float32
    with pytest.raises(TypeError, match="not complex"):
        tricycle.tensor([1 + 2j], dtype=tricycle.float32)  # Python numbers: torch refuses
    with warnings.catch_warnings():  # torch warns here (once a process); tricycle does not
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_allclose(from_numpy.array, torch.tensor(values, dtype=torch.float32))
    with pytest.raises(NotImplementedError, match="complex"):
        z.detach().log10()  # an op's own cast of a complex tensor: refused, not its real part
    assert tricycle.tensor([1.0]).to(tricycle.cfloat).dtype == np.complex64


def test_complex_randn_is_torchs_complex_normal():
    tricycle.manual_seed(0)
    z = tricycle.randn(200, 100, dtype=tricycle.cfloat)
    assert z.dtype == np.complex64 and z.shape == (200, 100)
    np.testing.assert_allclose(z.array.real.var(), 0.5, atol=0.03)  # each part: variance 1/2
    np.testing.assert_allclose(z.array.imag.var(), 0.5, atol=0.03)
    np.testing.assert_allclose((abs(z.array) ** 2).mean(), 1.0, atol=0.03)
    assert tricycle.randn(3, dtype=tricycle.cdouble, requires_grad=True).requires_grad


def test_comparisons_of_complex_tensors_are_torchs():
    a, b = _values((5,)), _values((5,))
    b[:2] = a[:2] * (1 + 1e-9)
    ours, theirs = (tricycle.tensor(a), tricycle.tensor(b)), (torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(tricycle.isclose(*ours).array, torch.isclose(*theirs).numpy())
    assert tricycle.allclose(ours[0], ours[0]) and not tricycle.allclose(*ours)
    np.testing.assert_array_equal((ours[0] == ours[1]).array, (theirs[0] == theirs[1]).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tricycle.testing.assert_close(ours[0], tricycle.tensor(a))
    with pytest.raises(AssertionError):
        tricycle.testing.assert_close(*ours)


def test_an_op_that_is_not_complex_aware_refuses_even_with_a_real_output():
    z = Tensor(_values((3,)), requires_grad=True)
    out = tricycle.unary.sigmoid(z)  # reached past the top-level name: real numbers, wrong
    with pytest.raises(NotImplementedError, match="not complex-aware"):
        out.sum().backward()
    with pytest.raises(NotImplementedError, match="complex"):
        tricycle.cov(z.detach())


def test_a_complex_parameter_steps_as_torchs_under_sgd():
    w = _values((3, 2))
    ours = tricycle.nn.Parameter(tricycle.tensor(w))
    theirs = torch.nn.Parameter(torch.tensor(w))
    opt = tricycle.optim.SGD([ours], lr=0.01, momentum=0.9, weight_decay=0.1)
    opt_t = torch.optim.SGD([theirs], lr=0.01, momentum=0.9, weight_decay=0.1)
    x = _values((4, 3))
    for _ in range(3):
        loss = (tricycle.abs(tricycle.tensor(x) @ ours) ** 2).sum()
        loss_t = ((torch.tensor(x) @ theirs).abs() ** 2).sum()
        opt.zero_grad(), opt_t.zero_grad()
        loss.backward(), loss_t.backward()
        opt.step(), opt_t.step()
        np.testing.assert_allclose(loss.array, loss_t.item(), rtol=1e-9)
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-9)
    with pytest.raises(NotImplementedError, match="complex"):
        tricycle.optim.Adafactor([ours])  # torch's refuses complex parameters too


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_complex_ops_and_transforms_on_a_gpu_are_the_hosts():
    from tricycle import fft

    a, b = _values((4, 8)), _values((4, 8))
    results = []
    for device in ("cpu", "cuda"):
        x = tricycle.tensor(a, device=device, requires_grad=True)
        y = tricycle.tensor(b, device=device, requires_grad=True)
        spectrum = fft.fft(x * y) + fft.ifft2(x) + fft.fftn(y, norm="ortho")
        real = fft.irfft(fft.rfft(tricycle.abs(x), norm="forward"), n=8) + fft.hfft(y[:, :5])
        loss = (tricycle.abs(spectrum) ** 2).sum() + (real * real).sum()
        loss.backward()
        results.append([backend.to_host_array(t) for t in (loss.array, x.grad.array, y.grad.array)])
    for host, gpu in zip(*results):
        np.testing.assert_allclose(gpu, host, rtol=1e-9, atol=1e-9)


def test_requires_grad_on_a_complex_leaf_as_torchs():
    torch = pytest.importorskip("torch")
    v = np.array([1 + 2j, 3 - 1j, -0.5j])
    z = tricycle.tensor(v).requires_grad_(True)
    (z.abs() ** 2 * tricycle.tensor([1.0, 2.0, 3.0])).sum().backward()
    t = torch.tensor(v).requires_grad_(True)
    (t.abs() ** 2 * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_a_copying_to_keeps_a_complex_tensor_and_its_gradient_as_torchs():
    torch = pytest.importorskip("torch")
    v = np.array([[1 + 2j, 3 - 1j]])
    z = tricycle.tensor(v, requires_grad=True)
    (z.to("cpu", copy=True).abs() ** 2).sum().backward()
    t = torch.tensor(v, requires_grad=True)
    (t.to("cpu", copy=True).abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)

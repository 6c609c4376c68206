"""Round 42's review of the round's math and engine work: each test shows a defect that was
found (it failed before its fix), against torch.

- ``mH``, ``H`` and ``adjoint()`` of a complex tensor swapped the axes without conjugating
  (Tensor's real-only transposes were inherited): silently wrong values and gradients.
- ``linalg.eigvals`` of a tensor needing no gradient returned a bare ``graph.Node`` (no
  ``.real``, ``.abs()``, ...) instead of a complex Tensor.
- ``argmax``, ``argmin``, ``argsort``, ``heaviside``, ``isposinf``/``isneginf``,
  ``searchsorted`` and ``bucketize`` of a complex tensor gave numpy's numbers (complex
  numbers ordered lexicographically; isposinf all False) where torch raises: now they raise
  torch's kind of error.
"""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(42)
Z = RNG.normal(size=(2, 3, 4)) + 1j * RNG.normal(size=(2, 3, 4))
W = RNG.normal(size=(2, 4, 3)) + 1j * RNG.normal(size=(2, 4, 3))


def _grad(lib, data, fn):
    """fn(z) and z.grad for the real loss Re(sum(fn(z) * W)) + Im(sum(fn(z)^2)), in ``lib``."""
    z = lib.tensor(data, requires_grad=True)
    out = fn(z)
    weights = lib.tensor(W.reshape(-1)[: out.numel()].reshape(out.shape))
    ((out * weights).real.sum() + (out * out).imag.sum()).backward()
    resolved = out.resolve_conj() if lib is torch else out
    return np.asarray(resolved.detach().numpy()), np.asarray(z.grad.resolve_conj().numpy())


@pytest.mark.parametrize(
    "name, data, fn",
    [
        ("mH", Z, lambda z: z.mH),
        ("adjoint", Z, lambda z: z.adjoint()),
        ("H", Z[0], lambda z: z.H),
    ],
)
def test_conjugate_transposes_of_complex_tensors_conjugate(name, data, fn):
    want, want_grad = _grad(torch, data, fn)
    got, got_grad = _grad(tc, data, fn)
    np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, err_msg=name)


def test_eigvals_without_a_gradient_is_a_complex_tensor():
    a = RNG.normal(size=(4, 4))
    got = tc.linalg.eigvals(tc.tensor(a))  # no gradient wanted: the host's eigvals alone
    want = torch.linalg.eigvals(torch.tensor(a))
    assert got.is_complex() and got.dtype == np.complex128
    np.testing.assert_allclose(got.abs().numpy(), want.abs().numpy(), rtol=1e-10)  # one order
    np.testing.assert_allclose(np.sort_complex(got.numpy()), np.sort_complex(want.numpy()))


COMPLEX = np.array([[1 + 2j, -3j], [2 - 1j, 0.5]])
REFUSED = {
    "argmax": lambda lib, z: lib.argmax(z),
    "Tensor.argmax": lambda lib, z: z.argmax(1),
    "argmin": lambda lib, z: lib.argmin(z, 0),
    "argsort": lambda lib, z: lib.argsort(z),
    "Tensor.argsort": lambda lib, z: z.argsort(),
    "heaviside": lambda lib, z: lib.heaviside(z, z),
    "isposinf": lambda lib, z: lib.isposinf(z),
    "Tensor.isneginf": lambda lib, z: z.isneginf(),
    "searchsorted": lambda lib, z: lib.searchsorted(z[0], z[1]),
    "bucketize": lambda lib, z: lib.bucketize(z[0], z[1].real.contiguous()),
}


@pytest.mark.parametrize("name", REFUSED)
def test_orderless_ops_refuse_complex_tensors_as_torchs(name):
    fn = REFUSED[name]
    with pytest.raises((RuntimeError, NotImplementedError)) as torchs:
        fn(torch, torch.tensor(COMPLEX))
    with pytest.raises(type(torchs.value), match="complex"):
        fn(tc, tc.tensor(COMPLEX))
    fn(tc, tc.tensor(COMPLEX.real))  # a real tensor still works

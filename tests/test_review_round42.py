"""Round 42's review of the round's math and engine work: each test shows a defect that was
found (it failed before its fix), against torch.

- ``mH``, ``H`` and ``adjoint()`` of a complex tensor swapped the axes without conjugating
  (Tensor's real-only transposes were inherited): silently wrong values and gradients.
- ``linalg.eigvals`` of a tensor needing no gradient returned a bare ``graph.Node`` (no
  ``.real``, ``.abs()``, ...) instead of a complex Tensor.
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

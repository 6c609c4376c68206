"""The CPU's products of 16-bit floats (tricycle/backends/cpu/half_matmul.py): against numpy's
own (the reference: the same dtype, shape and values, sums aside) for random shapes with batch
axes, broadcasting, vectors, size-1 and empty axes and strided operands; and a Linear under
``autocast(device_type="cpu", dtype=bfloat16)``, forward and backward, against torch's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tricycle import backend, dispatch

pytest.importorskip("numba")
from tricycle.backends.cpu import half_matmul  # noqa: E402


def dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")  # an optional dependency: bfloat16 on the CPU
        return backend.bfloat16("test")
    return np.dtype(name)


@settings(deadline=None)
@given(
    names=st.sampled_from([("bfloat16", "bfloat16"), ("float16", "float16"),
                           ("bfloat16", "float32"), ("float32", "float16"),
                           ("float64", "bfloat16"), ("float16", "bfloat16")]),
    batches=st.sampled_from([((), ()), ((3,), ()), ((), (3,)), ((2, 1), (4,)),
                             ((1, 3), (2, 1, 3))]),
    m=st.integers(0, 9), k=st.integers(1, 40), n=st.integers(1, 9),
    vector=st.sampled_from([None, "a", "b"]), strided=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_products_with_sixteen_bits_match_numpys(names, batches, m, k, n, vector, strided, seed):
    rng, (batch, other_batch) = np.random.default_rng(seed), batches
    a_shape = (k,) if vector == "a" else (*batch, m, k)
    b_shape = (k,) if vector == "b" else (*other_batch, k, 2 * n if strided else n)
    a = rng.standard_normal(a_shape).astype(dtype(names[0]))
    b = rng.standard_normal(b_shape).astype(dtype(names[1]))
    b = b[..., ::2] if strided and vector != "b" else b
    kernel = dispatch.choose("matmul", np.matmul, a, b)
    assert kernel is half_matmul.matmul
    expected, got = np.matmul(a, b), kernel(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    # float32 sums in another order: float32's rounding, then the reference's own dtype's
    tolerance = 1e-2 if expected.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(
        got.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance
    )


def test_products_without_sixteen_bits_stay_with_the_wide_kernels():
    a, b = np.ones((3, 2, 4), dtype=np.float32), np.ones((4, 5), dtype=np.float64)
    assert not half_matmul.applies(a, b)
    assert dispatch.choose("matmul", np.matmul, a, b) is np.matmul  # batched float: numpy's


def test_a_linear_under_cpu_autocast_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    pytest.importorskip("ml_dtypes")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 32)).astype(np.float32)
    theirs = torch.nn.Linear(32, 24)
    ours = nn.Linear(32, 24)
    nn.from_torch(ours, theirs.state_dict())
    their_x = torch.tensor(x, requires_grad=True)
    our_x = tricycle.tensor(x, requires_grad=True)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        their_y = theirs(their_x)
    with tricycle.autocast(device_type="cpu", dtype=tricycle.bfloat16):
        our_y = ours(our_x)

    def close(ours, theirs):  # bfloat16's 8 bits: a few units in the last place of the largest
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-2 * np.abs(theirs).max())

    close(our_y.numpy(), their_y.float().detach().numpy())  # torch's rounded to bfloat16
    weights = rng.standard_normal(our_y.shape).astype(np.float32)
    (their_y.float() * torch.tensor(weights)).sum().backward()
    (our_y * tricycle.tensor(weights)).sum().backward()
    close(our_x.grad.numpy(), their_x.grad.numpy())
    close(ours.weights.grad.numpy(), theirs.weight.grad.numpy().T)
    close(ours.bias.grad.numpy(), theirs.bias.grad.numpy())

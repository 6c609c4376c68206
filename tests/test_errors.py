"""Bad input raises an exception whose message names the op and the shapes or values seen."""

import types

import numpy as np
import pytest

from tricycle import backend, binary, ops, reduce, unary
from tricycle.einsum import Einsum
from tricycle.tensor import Tensor, to_tensor


def ones(*shape):
    return Tensor(np.ones(shape))


# ------------------------------------------------------------------ einsum
@pytest.mark.parametrize(
    ("subscript", "shapes", "error", "message"),
    [
        ("ij,jk->ik", [(2, 3)], ValueError, r"Einsum ij,jk->ik: expected 2 operand\(s\), got 1"),
        ("ij->ji", [(2, 3), (3, 2)], ValueError, r"Einsum ij->ji: expected 1 operand\(s\), got 2"),
        ("ij,jk->ik", [(2, 3), (4, 5)], ValueError, r"index 'j' has size 3 .* and 4 .*\(2, 3\)"),
        (
            "ij->j",
            [(2, 3, 4)],
            ValueError,
            r"operand 'ij' has 3 dimension\(s\) \(shape \(2, 3, 4\)",
        ),
        ("...ij->...j", [(3,)], ValueError, r"'...ij' has 1 dimension\(s\).*at least 2"),
        ("...i,...i->...", [(2, 3), (4, 3)], ValueError, r"an axis under '...' has size 2 .* 4"),
    ],
)
def test_einsum_shape_errors(subscript, shapes, error, message):
    with pytest.raises(error, match=message):
        Einsum(subscript)(*[ones(*shape) for shape in shapes])


@pytest.mark.parametrize(
    ("subscript", "message"),
    [
        ("ij->k", r"Einsum: output index 'k' of 'ij->k' is in no input"),
        ("i1->i", r"Einsum: 'i1->i' contains '1'; indices must be letters"),
        (".i->i", r"'.i->i' has a '.' in '.i' that is not part of '...'"),
        ("ij->ii", r"output of 'ij->ii' repeats an index"),
        ("ij->j->i", r"'ij->j->i' has more than one '->'"),
        ("......i->i", r"more than one '...'"),
        ("i->...i", r"output of 'i->...i' has '...' but no input does"),
        ("i..j->ij", r"'i..j->ij' has a '.' in 'i..j' that is not part of '...'"),
    ],
)
def test_malformed_einsum_subscripts(subscript, message):
    with pytest.raises(ValueError, match=message):
        Einsum(subscript)


def test_matmul_errors():
    with pytest.raises(ValueError, match=r"matmul: inner dimensions differ: \(2, 3\) @ \(4, 5\)"):
        ones(2, 3) @ ones(4, 5)
    with pytest.raises(ValueError, match=r"matmul: operands must not be scalars, got \(\) @"):
        Tensor(np.array(2.0)) @ ones(2)


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize(
    ("fn", "op"),
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"),
        (lambda a, b: a**b, "pow"),
        (binary.maximum, "maximum"),
        (binary.minimum, "minimum"),
        (lambda a, b: a < b, "<"),
    ],
)
def test_broadcast_mismatch(fn, op):
    with pytest.raises(ValueError, match=rf"{op}: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        fn(ones(2, 3), ones(4))


def test_scalar_errors():
    with pytest.raises(ZeroDivisionError, match=r"div: dividing a tensor of shape \(2,\) by"):
        ones(2) / 0
    with pytest.raises(ValueError, match="clip: low=2 must not exceed high=1"):
        ones(2).clip(2, 1)


# ------------------------------------------------------------------ reductions
def test_reduction_errors():
    with pytest.raises(ValueError, match=r"sum: axis must be .* shape is \(2, 3\)\), got 2"):
        ones(2, 3).sum(axis=2)
    with pytest.raises(ValueError, match=r"max: axis must be .* \(2, 3\)\), got -3"):
        ones(2, 3).max(axis=-3)
    with pytest.raises(ValueError, match=r"mean: axis must be .* distinct .*, got \(0, -2\)"):
        ones(2, 3).mean(axis=(0, -2))
    with pytest.raises(ValueError, match=r"mean: cannot reduce an empty tensor of shape \(0, 3\)"):
        Tensor(np.ones((0, 3))).mean()
    with pytest.raises(ValueError, match="var: 1 elements with ddof=1 leave no degrees"):
        reduce.var(ones(1, 3), axis=0, ddof=1)


# ------------------------------------------------------------------ shapes and indexing
def test_shape_op_errors():
    with pytest.raises(ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\)"):
        ones(2, 3).reshape(4)
    with pytest.raises(ValueError, match=r"transpose: axes must be .* \(2, 3\).*, got \(0, 3\)"):
        ones(2, 3).transpose((0, 3))
    with pytest.raises(ValueError, match=r"transpose: axes must be .*permutation.*, got \(0, 0\)"):
        ones(2, 3).transpose((0, 0))
    with pytest.raises(ValueError, match=r"swapaxes: b must be .* \(2, 3\)\), got 3"):
        ones(2, 3).transpose(0, 3)  # two axes: swapped, as torch's
    with pytest.raises(ValueError, match=r"swapaxes: b must be .* \(2, 3\)\), got 2"):
        ones(2, 3).swapaxes(0, 2)
    assert ones(2, 1).squeeze(0).shape == (2, 1)  # torch's squeeze(dim): a size-2 axis stays
    with pytest.raises(ValueError, match=r"squeeze: axis must be .* \(2, 1\)\), got 5"):
        ones(2, 1).squeeze(5)
    with pytest.raises(ValueError, match=r"split: axis 1 of size 5 \(shape \(2, 5\)\) does not"):
        ones(2, 5).split(2, axis=1)
    with pytest.raises(ValueError, match=r"concatenate: shapes \[\(2, 3\), \(2, 4\)\] along"):
        ops.concatenate([ones(2, 3), ones(2, 4)], axis=0)
    with pytest.raises(ValueError, match=r"stack: shapes \[\(2, 3\), \(2, 4\)\]"):
        ops.stack([ones(2, 3), ones(2, 4)])
    with pytest.raises(ValueError, match="repeat: repeats must be an integer >= 0, got -1"):
        ones(2).repeat(-1)
    with pytest.raises(TypeError, match="masked_fill: mask must be boolean, got int64"):
        ones(2).masked_fill(np.array([0, 1]), 0.0)
    with pytest.raises(ValueError, match=r"where: condition \(3,\), a \(2,\) and b \(2,\)"):
        ops.where(np.array([True, False, True]), ones(2), ones(2))


def test_getitem_out_of_range():
    with pytest.raises(IndexError, match=r"getitem: index 5 for shape \(3,\).*out of bounds"):
        ones(3)[5]
    with pytest.raises(IndexError, match=r"getitem: .* for shape \(3, 2\).*out of bounds"):
        ones(3, 2)[np.array([0, 3])]
    with pytest.raises(IndexError, match=r"getitem: .* for shape \(3,\)"):
        ones(3)[np.array([True, False])]


# ------------------------------------------------------------------ gradients and dtypes
def test_backward_errors():
    with pytest.raises(TypeError, match=r"backward: cannot differentiate .* int64 \(shape \(2,\)"):
        to_tensor([1, 2], dtype=int).backward()
    with pytest.raises(TypeError, match=r"Tensor: only floating tensors .* int64 with shape"):
        Tensor(np.array([1, 2]), requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"backward: tensor .* \(shape \(2,\)\) does not require"
    ):
        Tensor(np.ones(2), requires_grad=False).backward()
    x = ones(2)
    with pytest.raises(
        ValueError, match=r"backward: gradient shape \(3,\) does not match .*\(2,\)"
    ):
        (x * 2).backward(np.ones(3))


def test_a_back_fn_returning_the_wrong_shape_is_caught():
    x = ones(2, 3)
    bad = Tensor(x.array.sum(0), args=(x,), back_fns=(lambda dout: dout,), name="badsum")
    with pytest.raises(RuntimeError, match=r"backward of badsum: .* shape \(2, 3\) came back"):
        bad.backward()


def test_args_and_back_fns_must_pair_up():
    x = ones(2)
    with pytest.raises(ValueError, match="Tensor op: 1 args but 2 back_fns"):
        Tensor(x.array, args=(x,), back_fns=(lambda d: d, lambda d: d), name="op")


def test_bool_of_a_tensor():
    with pytest.raises(ValueError, match=r"bool\(Tensor\) of shape \(2, 3\) is ambiguous"):
        bool(ones(2, 3))


# ------------------------------------------------------------------ devices
def test_check_same_device_message(monkeypatch):
    """Simulate a GPU: one array reports cuda:0, the other cpu."""

    class FakeGpuArray(np.ndarray):
        pass

    gpu = np.ones((2, 3)).view(FakeGpuArray)
    cpu = np.ones(3)
    fake_cupy = types.SimpleNamespace(ndarray=FakeGpuArray)
    monkeypatch.setattr(backend, "_cupy", fake_cupy)
    monkeypatch.setattr(
        backend, "device_of", lambda a: "cuda:0" if isinstance(a, FakeGpuArray) else "cpu"
    )
    with pytest.raises(
        ValueError,
        match=r"add: all tensors must be on the same device, got \(2, 3\) on cuda:0, "
        r"\(3,\) on cpu\. Move them with \.to_gpu\(device\) or \.from_gpu\(\) first\.",
    ):
        backend.check_same_device("add", gpu, cpu)
    with pytest.raises(ValueError, match=r"add: all tensors must be on the same device"):
        Tensor(gpu) + Tensor(cpu)
    with pytest.raises(ValueError, match=r"Einsum ij,j->i: all tensors must be on the same"):
        Einsum("ij,j->i")(Tensor(gpu), Tensor(cpu))
    with pytest.raises(ValueError, match=r"concatenate: all tensors must be on the same device"):
        ops.concatenate([Tensor(gpu), Tensor(np.ones((1, 3)))])
    # arrays on one device: their array module, cupy's for GPU arrays and numpy's for host ones
    assert backend.check_same_device("add", gpu, gpu) is fake_cupy
    assert backend.check_same_device("add", cpu, cpu) is np


def test_mixed_devices_on_a_gpu():
    if not backend.cupy_available():
        pytest.skip("no CUDA GPU")
    cp = backend.cupy()
    a, b = to_tensor([1.0, 2.0]), to_tensor([1.0, 2.0]).to_gpu()
    with pytest.raises(ValueError, match=r"add: all tensors must be on the same device, got "):
        a + b
    with pytest.raises(ValueError, match="on cuda:0"):
        unary.exp(a) * b
    assert (b + b).xp is cp


def test_no_gpu_error_is_clear(monkeypatch):
    monkeypatch.setattr(backend, "cupy_available", lambda: False)
    with pytest.raises(RuntimeError, match="tricycle: no CUDA GPU is available"):
        to_tensor([1.0]).to_gpu()


def test_a_back_fn_returning_a_tensor_is_accepted():
    """The original Tricycle's ops return Tensors from their back_fns: the array is taken."""
    x = ones(2, 3)
    y = Tensor(x.array * 3, args=(x,), back_fns=(lambda dout: Tensor(dout * 3),), name="triple")
    y.backward()
    assert np.array_equal(x.grad.array, np.full((2, 3), 3.0))


def test_an_error_inside_a_back_fn_names_the_op_and_the_convention():
    """A back_fn written for Tensor gradients (``grad.array``) gets an array: the error names
    the op, its input and what a back_fn takes, and keeps its kind and its cause."""
    x = ones(2, 3)
    y = Tensor(x.array * 3, args=(x,), back_fns=(lambda grad: grad.array * 3,), name="triple")
    with pytest.raises(AttributeError, match=r"backward of triple .*back_fn of input 0") as info:
        y.backward()
    assert "not a Tensor" in str(info.value)
    assert isinstance(info.value.__cause__, AttributeError)


def test_torchs_tensor_of_sizes_is_named():
    """``torch.Tensor(3, 4)`` makes an uninitialised (3, 4) tensor; tricycle's Tensor(x) holds
    x, so the second number is refused with what to write instead."""
    import tricycle

    with pytest.raises(TypeError, match=r"tricycle.empty\(\*sizes\)"):
        tricycle.Tensor(3, 4)

"""torch's dtype and shape questions on tricycle (``tricycle.torch_dtypes``): ``finfo`` and
``iinfo`` against torch's for every dtype, ``promote_types`` and ``can_cast`` for every pair,
``result_type`` for tensors with axes, 0-d tensors and Python numbers, ``Size``,
``set_default_tensor_type`` and ``is_storage``, and the errors."""

import itertools

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")

NAMES = "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64".split()
PAIRS = [(getattr(tc, name), getattr(torch, name)) for name in NAMES]
FLOATS = [pair for pair in PAIRS if pair[1].is_floating_point]
INTEGERS = [pair for pair in PAIRS if not pair[1].is_floating_point and pair[1] != torch.bool]


def as_torch(dtype):
    return next(theirs for ours, theirs in PAIRS if ours is dtype)


@pytest.mark.parametrize(("ours", "theirs"), FLOATS)
def test_finfo_as_torchs(ours, theirs):
    a, b = tc.finfo(ours), torch.finfo(theirs)
    for name in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.dtype == b.dtype
    assert repr(a) == repr(b)


def test_finfo_of_none_is_the_default_float():
    assert tc.finfo().eps == torch.finfo().eps == np.finfo(np.float32).eps


@pytest.mark.parametrize(("ours", "theirs"), INTEGERS)
def test_iinfo_as_torchs(ours, theirs):
    a, b = tc.iinfo(ours), torch.iinfo(theirs)
    assert (a.bits, a.max, a.min, a.dtype) == (b.bits, b.max, b.min, b.dtype)
    assert repr(a) == repr(b)


def test_promote_types_and_can_cast_for_every_pair():
    for (a, ta), (b, tb) in itertools.product(PAIRS, PAIRS):
        assert as_torch(tc.promote_types(a, b)) == torch.promote_types(ta, tb), (a, b)
        assert tc.can_cast(a, b) == torch.can_cast(ta, tb), (a, b)


OPERANDS = [("tensor", name) for name in NAMES if name != "bfloat16"] + [
    ("0-d", name) for name in ("bool", "int32", "int64", "float16", "float64")
] + [("number", value) for value in (True, 3, 2.5)]  # fmt: skip


def build(kind, what, library):
    if kind == "number":
        return what
    dtype = getattr(library, what)
    shape = () if kind == "0-d" else (2,)
    return tc.zeros(shape, dtype=dtype) if library is tc else torch.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("first", OPERANDS, ids=str)
def test_result_type_as_torchs(first):
    for second in OPERANDS:
        if first[0] == second[0] == "number":
            continue
        ours = tc.result_type(build(*first, tc), build(*second, tc))
        theirs = torch.result_type(build(*first, torch), build(*second, torch))
        assert as_torch(ours) == theirs, (first, second)


def test_result_type_is_what_arithmetic_gives():
    for a, b in [(tc.ones(2, dtype=tc.int32), 2.5), (tc.ones(2), tc.ones((), dtype=tc.float64)),
                 (tc.ones(2, dtype=tc.int64), tc.ones(2, dtype=tc.float16))]:  # fmt: skip
        assert (a + b).dtype == tc.result_type(a, b)


def test_size_is_a_tuple_as_torchs():
    size = tc.Size([2, 3, 4])
    assert size == (2, 3, 4) and tc.zeros(2, 3, 4).shape == size
    assert isinstance(size, tuple)
    assert size.numel() == torch.Size([2, 3, 4]).numel() == 24 and tc.Size().numel() == 1
    assert isinstance(size[1:], tc.Size) and size[1:] == (3, 4) and size[-1] == 4
    assert isinstance(size + (5,), tc.Size) and size + (5,) == (2, 3, 4, 5)
    assert repr(size) == repr(torch.Size([2, 3, 4])).replace("torch", "tricycle")
    assert tc.Size(np.int64(n) for n in (1, 2)) == (1, 2)
    with pytest.raises(TypeError, match="Size: takes an iterable of int .item 1 is 'float'"):
        tc.Size([2, 3.0])


def test_set_default_tensor_type():
    tc.set_default_tensor_type(tc.FloatTensor)
    tc.set_default_tensor_type("torch.FloatTensor")
    assert tc.get_default_dtype() is tc.float32
    with pytest.raises(ValueError, match="set_default_tensor_type: DoubleTensor makes float64"):
        tc.set_default_tensor_type(tc.DoubleTensor)
    with pytest.raises(ValueError, match="GPU type"):
        tc.set_default_tensor_type("torch.cuda.FloatTensor")
    with pytest.raises(TypeError):
        torch.set_default_tensor_type("torch.IntTensor")
    for bad in ("torch.IntTensor", tc.LongTensor, 3):
        with pytest.raises(TypeError, match="only floating-point types"):
            tc.set_default_tensor_type(bad)


def test_is_storage():
    x = tc.zeros(3)
    assert tc.is_storage(x.storage()) and not tc.is_storage(x) and not tc.is_storage([1])
    assert torch.is_storage(torch.zeros(3).untyped_storage())


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: tc.finfo(tc.int32), TypeError, "finfo: needs a floating point dtype, got int32"),
        (lambda: tc.iinfo(tc.float32), TypeError, "iinfo: needs an integer dtype, got float32"),
        (lambda: tc.iinfo(tc.bool), TypeError, "iinfo: bool is not supported"),
        (lambda: tc.finfo("nonsense"), TypeError, "finfo: 'nonsense' is not a dtype"),
        (lambda: tc.result_type(2, 3.0), TypeError, "result_type: needs at least one Tensor"),
        (lambda: tc.result_type(tc.ones(2), "a"), TypeError, "result_type: operands must be"),
        (lambda: tc.promote_types(np.uint64, tc.int8), RuntimeError, "Promotion for uint16, "),
    ],
)
def test_errors_name_the_function(call, error, match):
    with pytest.raises(error, match=match):
        call()

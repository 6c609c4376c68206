"""torch's memory formats on tricycle (``tricycle.memory_formats``: ``Tensor.contiguous``,
``clone`` and ``to`` with ``memory_format=``, the ``*_like`` factories, ``Module.to``) and
torch's float8 and unsigned dtypes: the strides each gives against torch's on permuted,
sliced and channels-last tensors, the values unchanged, gradients through a change of format,
a convolution and a matmul taking channels-last arrays, the casts' values and ``finfo``/``iinfo``
against torch's, and what torch refuses refused alike."""

import numpy as np
import pytest

import tricycle as tc
from tricycle import backend, memory_formats

torch = pytest.importorskip("torch")

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d")


def strides(array) -> tuple:
    return tuple(s // array.itemsize for s in array.strides)


def shaken(seed: int):
    """A torch tensor of rank 1 to 5, its axes permuted and one of them perhaps sliced (what
    a program's permutes and slices make), and tricycle's view of the same memory."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 4, rng.integers(1, 6)))
    t = torch.arange(int(np.prod(shape)), dtype=torch.float64).reshape(shape)
    t = t.permute(tuple(int(a) for a in rng.permutation(len(shape))))
    if rng.random() < 0.3 and t.ndim > 1:
        index = [slice(None)] * t.ndim
        index[int(rng.integers(t.ndim))] = slice(None, None, 2)
        t = t[tuple(index)]
    return t, t.numpy()


@pytest.mark.parametrize("seed", range(150))
def test_is_contiguous_and_preserved_strides_as_torch(seed):
    t, array = shaken(seed)
    for name in FORMATS:
        ours = tc.Tensor(array).is_contiguous(memory_format=getattr(tc, name))
        assert ours == t.is_contiguous(memory_format=getattr(torch, name)), name
    if 1 not in t.shape:  # a size-1 axis's stride is anyone's guess
        assert strides(memory_formats.laid_out("clone", array, tc.preserve_format)) == (
            t.clone().stride()
        )
        if t.ndim in (4, 5):
            suggested = memory_formats.suggest_format(array)
            like = torch.empty_like(t).is_contiguous(memory_format=getattr(torch, suggested))
            assert like or suggested == "contiguous_format"


def pair(*shape, seed=0):
    a = np.random.default_rng(seed).normal(size=shape)
    return tc.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape, name", [((2, 3, 4, 5), "channels_last"),
                                         ((2, 3, 2, 4, 5), "channels_last_3d"),
                                         ((2, 3, 4, 5), "contiguous_format")])  # fmt: skip
def test_contiguous_clone_to_lay_out_as_torch(shape, name):
    ours, theirs = pair(*shape)
    for method in ("contiguous", "clone", "to"):
        y = getattr(ours, method)(memory_format=getattr(tc, name))
        ty = getattr(theirs, method)(memory_format=getattr(torch, name))
        assert strides(y.array) == ty.stride(), method
        np.testing.assert_array_equal(y.array, ty.detach().numpy())
        assert (y is ours) == (ty is theirs), method
        # the layout is kept by the copies that preserve it: clone, a cast, the *_like factories
        kept = [y.clone(), y.to(np.float32), tc.zeros_like(y), tc.empty_like(y), tc.ones_like(y)]
        made = [ty.clone(), ty.to(torch.float32), torch.zeros_like(ty), torch.empty_like(ty)]
        for k, m in zip(kept, [*made, torch.ones_like(ty)], strict=True):
            assert strides(k.array) == m.stride(), method
        assert strides(tc.full_like(y, 2.0).array) == torch.full_like(ty, 2.0).stride()
        # what was laid out is contiguous in that format, and back in rows when asked
        assert y.contiguous(memory_format=getattr(tc, name)) is y
        assert strides(y.contiguous().array) == ty.contiguous().stride()
        # the gradient of a change of format is the gradient
        weights = np.random.default_rng(1).normal(size=shape)
        (y * tc.Tensor(weights)).sum().backward()
        (ty * torch.tensor(weights)).sum().backward()
        np.testing.assert_array_equal(ours.grad.array, theirs.grad.numpy())
        ours.grad, theirs.grad = None, None


def test_to_aliases_as_torch():
    ours, theirs = pair(2, 3, 4, 5)
    last = ours.to(memory_format=tc.channels_last)
    t_last = theirs.to(memory_format=torch.channels_last)
    cases = [
        (lambda x, lib: x.to(memory_format=lib.channels_last), last, t_last),
        (lambda x, lib: x.to(memory_format=lib.contiguous_format), last, t_last),
        (lambda x, lib: x.to(memory_format=lib.preserve_format), last, t_last),
        (lambda x, lib: x.to(memory_format=lib.channels_last, copy=True), last, t_last),
        (lambda x, lib: x.transpose(1, 2).to(memory_format=lib.contiguous_format), ours, theirs),
        (lambda x, lib: x.transpose(1, 2).clone(), ours, theirs),
    ]
    for make, x, t in cases:
        y, ty = make(x, tc), make(t, torch)
        assert strides(y.array) == ty.stride()
        np.testing.assert_array_equal(y.array, ty.detach().numpy())
    assert last.to(memory_format=tc.channels_last) is last
    assert last.to(memory_format=tc.channels_last, copy=True) is not last


@pytest.mark.parametrize("call", [
    lambda x, lib: x.contiguous(memory_format=lib.channels_last),
    lambda x, lib: x.clone(memory_format=lib.channels_last_3d),
    lambda x, lib: x.to(memory_format=lib.channels_last),
    lambda x, lib: lib.zeros_like(x, memory_format=lib.channels_last),
    lambda x, lib: lib.empty_like(x, memory_format=lib.channels_last_3d),
    lambda x, lib: x.contiguous(memory_format=lib.preserve_format),
])  # fmt: skip
def test_refusals_as_torch(call):
    x, t = tc.Tensor(np.ones((2, 3)).T), torch.ones(2, 3).T
    with pytest.raises(RuntimeError) as theirs:
        call(t, torch)
    with pytest.raises(RuntimeError, match=str(theirs.value).split(" by ")[0]):
        call(x, tc)


def test_a_format_must_be_a_format():
    x = tc.ones(2, 3, 4, 5)
    for call in (lambda: x.contiguous(memory_format=3), lambda: x.clone(memory_format="nhwc"),
                 lambda: x.to(memory_format=torch.channels_last)):  # fmt: skip
        with pytest.raises(TypeError, match="memory_format"):
            call()


def test_module_to_lays_out_its_four_dimensional_tensors():
    from tricycle import nn

    ours = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(16, 2))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(),
                                 torch.nn.Linear(16, 2)).double()  # fmt: skip
    assert ours.to(memory_format=tc.channels_last) is ours
    theirs.to(memory_format=torch.channels_last)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        if p.ndim == 4:
            assert strides(p.array) == q.stride(), name
        else:
            assert p.array.flags.c_contiguous, name
    with pytest.raises(RuntimeError, match="rank 4"):
        nn.Conv3d(1, 1, 1).to(memory_format=tc.channels_last)
    with pytest.raises(RuntimeError, match="rank 4"):
        torch.nn.Conv3d(1, 1, 1).to(memory_format=torch.channels_last)


def test_conv_and_matmul_take_channels_last_arrays():
    """A channels-last input and weight give a convolution's and a matmul's values and
    gradients as row-major ones do, and as torch's."""
    x, tx = pair(2, 3, 6, 6)
    w, tw = pair(4, 3, 3, 3, seed=1)
    lay = lambda a, lib: a.contiguous(memory_format=lib.channels_last)  # noqa: E731
    y = tc.nn.functional.conv2d(lay(x, tc), lay(w, tc), padding=1)
    ty = torch.nn.functional.conv2d(lay(tx, torch), lay(tw, torch), padding=1)
    z = y @ lay(x, tc)[:, :1, :, :]  # (2, 4, 6, 6) @ (2, 1, 6, 6): a batched matmul
    tz = ty @ lay(tx, torch)[:, :1, :, :]
    np.testing.assert_allclose(z.array, tz.detach().numpy(), rtol=1e-10, atol=1e-12)
    z.sum().backward()
    tz.sum().backward()
    np.testing.assert_allclose(x.grad.array, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad.array, tw.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_formats_on_the_gpu():
    x = tc.Tensor(np.arange(120.0).reshape(2, 3, 4, 5)).to("cuda")
    y = x.contiguous(memory_format=tc.channels_last)
    assert strides(y.array) == (60, 1, 15, 3)
    assert strides(y.to(np.float32).array) == (60, 1, 15, 3)
    assert strides(tc.zeros_like(y).array) == (60, 1, 15, 3)
    np.testing.assert_array_equal(y.array.get(), x.array.get())
    assert memory_formats.is_contiguous(y.array, tc.channels_last)


# ---------------------------------------------------------------------- dtypes
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
UNSIGNED = ("uint16", "uint32", "uint64")


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_casts_and_finfo_as_torch(name):
    """Random values over the float8 ranges and beyond, infinities, NaN, zeros and the
    rounding ties cast as torch casts them (float8_e4m3fn saturates), and back."""
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.normal(scale=s, size=200) for s in (1e-3, 1.0, 100.0, 1e5)])
    a = np.concatenate([a, [np.inf, -np.inf, np.nan, 0.0, 465.0, 449.0, 0.5625, -0.0]])
    version = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
    if version < (2, 13):  # torch 2.11 cast what overflows to NaN, not to the saturated +-448
        a = a[~(np.abs(a) > 448)]
    ours = tc.Tensor(a.astype(np.float32)).to(getattr(tc, name))
    theirs = torch.tensor(a, dtype=torch.float32).to(getattr(torch, name))
    assert ours.dtype == np.dtype(getattr(tc, name)) and ours.dtype.name == name
    np.testing.assert_array_equal(ours.to(np.float32).array, theirs.float().numpy())
    assert tc.Tensor(a).to(getattr(tc, name)).is_floating_point()
    info, their_info = tc.finfo(getattr(tc, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(info, field) == getattr(their_info, field), field
    assert info.dtype == their_info.dtype
    # layout ops keep the values; torch promotes a float8 with nothing else
    np.testing.assert_array_equal(ours.reshape(-1, 2).to(np.float32).array.ravel(),
                                  theirs.reshape(-1, 2).float().numpy().ravel())  # fmt: skip
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        torch.promote_types(getattr(torch, name), torch.float32)
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        tc.promote_types(getattr(tc, name), tc.float32)
    assert tc.promote_types(getattr(tc, name), getattr(tc, name)) == getattr(tc, name)


@pytest.mark.parametrize("name", UNSIGNED)
def test_wide_unsigned_dtypes_as_torch(name):
    values = np.array([0, 1, 255, 65535], dtype=np.int64)
    ours, theirs = (
        tc.tensor(values).to(getattr(tc, name)),
        torch.tensor(values).to(getattr(torch, name)),
    )
    assert ours.dtype == np.dtype(name)
    np.testing.assert_array_equal(ours.array, theirs.numpy())
    np.testing.assert_array_equal(ours.to(np.float32).array, theirs.float().numpy())
    info, their_info = tc.iinfo(getattr(tc, name)), torch.iinfo(getattr(torch, name))
    assert (info.bits, info.min, info.max, info.dtype) == (
        their_info.bits, their_info.min, their_info.max, their_info.dtype)  # fmt: skip
    for other in ("int8", "int64", "uint8", "bool", "float16", "float32"):
        try:
            expected = torch.promote_types(getattr(torch, name), getattr(torch, other))
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match=str(error).split(",")[0]):
                tc.promote_types(getattr(tc, name), getattr(tc, other))
        else:
            ours_type = tc.promote_types(getattr(tc, name), getattr(tc, other))
            assert np.dtype(ours_type).name == str(expected).split(".")[1]
    with pytest.raises(ValueError, match="does not fit"):
        tc.tensor([-1]).to(getattr(tc, name))

"""torch.amp's helpers for custom autograd Functions on tricycle (``tricycle.amp_custom``):
``tricycle.amp.custom_fwd``/``custom_bwd`` against torch's on the CPU, one Function written
once for both libraries: the dtypes its forward receives, the autocast state its forward and
backward see, its output and the inputs' gradients, in and out of autocast, with and without
``cast_inputs`` (float64 and integer inputs and nested lists as torch's ``_cast`` leaves or
casts them); ``is_autocast_available``; the deprecated ``tricycle.cuda.amp`` forms (torch's
FutureWarning); and the errors."""

import warnings

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")


def name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def scaled_product(lib, cast_inputs, decorate=True):
    """A Function of (a, [b, n], c): a * b * c + n, that logs what its forward and backward see."""
    log = []
    fwd = lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs) if decorate else None
    bwd = lib.amp.custom_bwd(device_type="cpu") if decorate else None

    def forward(ctx, a, pair, c):
        b, n = pair
        seen = [name(t.dtype) for t in (a, b, n, c)]
        log.append(("forward", seen, lib.is_autocast_enabled("cpu")))
        ctx.save_for_backward(a, b, c)
        return a * b * c + n

    def backward(ctx, grad):
        a, b, c = ctx.saved_tensors
        state = lib.is_autocast_enabled("cpu"), name(lib.get_autocast_dtype("cpu"))
        log.append(("backward", name(grad.dtype), *state))
        return grad * b * c, None, grad * a * b

    class Product(lib.autograd.Function):
        pass

    Product.forward = staticmethod(fwd(forward) if fwd else forward)
    Product.backward = staticmethod(bwd(backward) if bwd else backward)
    return Product, log


def run(lib, cast_inputs, autocast, dtype=None, decorate=True):
    rng = np.random.default_rng(0)
    arrays = rng.normal(size=(3, 4, 4)).astype(np.float32)
    c_dtype = np.float64 if dtype is None else dtype
    a, b = (lib.tensor(x, requires_grad=True) for x in arrays[:2])
    c = lib.tensor(arrays[2].astype(c_dtype), requires_grad=True)
    n = lib.tensor(np.arange(16).reshape(4, 4))
    fn, log = scaled_product(lib, cast_inputs, decorate)
    if autocast:
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = fn.apply(a, [b, n], c)
    else:
        out = fn.apply(a, [b, n], c)
    out.float().sum().backward()
    grads = [np.asarray(x.grad.float().detach().numpy() if lib is torch else x.grad.array,
                        dtype=np.float64) for x in (a, c)]  # fmt: skip
    value = out.float().detach().numpy() if lib is torch else out.float().array
    return log, name(out.dtype), value, grads, [name(x.grad.dtype) for x in (a, c)]


CASES = [
    (None, False),
    (None, True),
    ("bfloat16", False),
    ("bfloat16", True),
    ("float16", True),
    ("float32", True),
]


@pytest.mark.parametrize("cast_inputs, autocast", CASES)
@pytest.mark.parametrize("c_dtype", [None, np.float32])
def test_custom_fwd_bwd_as_torch(cast_inputs, autocast, c_dtype):
    """The forward's inputs (float64 kept, integers kept, the list's float cast), the autocast
    state in forward and backward, the output and the gradients: torch's."""
    theirs = run(torch, cast_inputs and getattr(torch, cast_inputs), autocast, c_dtype)
    ours = run(tc, cast_inputs and getattr(tc, cast_inputs), autocast, c_dtype)
    assert ours[0] == theirs[0]  # what forward and backward saw
    assert ours[1] == theirs[1] and ours[4] == theirs[4]  # the output's and grads' dtypes
    tol = 1e-6 if cast_inputs in (None, "float32") else 0.05
    np.testing.assert_allclose(ours[2], theirs[2], rtol=tol, atol=tol)
    for got, want in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_undecorated_function_sees_autocast_in_forward_only():
    """Without the decorators the backward runs outside the block (the reason they exist)."""
    for lib in (torch, tc):
        log = run(lib, None, True, decorate=False)[0]
        assert [entry[:1] + entry[2:3] for entry in log] == [("forward", True), ("backward", False)]


def test_decorator_forms():
    """``custom_fwd(fwd, device_type=...)`` and ``custom_fwd(device_type=...)(fwd)`` alike,
    ``functools.wraps`` kept."""

    def forward(ctx, x):
        return x * 2

    direct = tc.amp.custom_fwd(forward, device_type="cpu")
    later = tc.amp.custom_fwd(device_type="cpu", cast_inputs=tc.float16)(forward)
    assert direct.__name__ == later.__name__ == "forward"
    ctx = type("Ctx", (), {})()
    assert direct(ctx, tc.ones(2)).tolist() == [2.0, 2.0]
    assert ctx._fwd_used_autocast is False and name(ctx._dtype) == "bfloat16"
    backward = tc.amp.custom_bwd(lambda ctx, g: g, device_type="cpu")
    assert backward(ctx, tc.ones(1)).tolist() == [1.0]


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:0", "xpu", "mps", "meta", "hpu"])
def test_is_autocast_available(device):
    assert tc.amp.is_autocast_available(device) == torch.amp.is_autocast_available(device)


def test_errors_as_torch():
    for bad in (
        lambda lib: lib.amp.custom_fwd(lambda ctx: ctx, device_type=1),
        lambda lib: lib.amp.custom_bwd(lambda ctx: ctx, device_type=None),
        lambda lib: lib.amp.is_autocast_available("foo"),
    ):
        with pytest.raises(Exception) as theirs:
            bad(torch)
        with pytest.raises(type(theirs.value)):
            bad(tc)
    with pytest.raises(TypeError, match="device_type"):
        tc.amp.custom_fwd(lambda ctx: ctx)


def test_cuda_amp_forms_warn_as_torch():
    """tricycle.cuda.amp.custom_fwd/custom_bwd: torch's FutureWarning, then torch.amp's on
    "cuda" (outside autocast: a plain call on this host)."""
    for lib in (torch, tc):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fwd = lib.cuda.amp.custom_fwd(cast_inputs=lib.float16)(lambda ctx, x: x + 1)
            bwd = lib.cuda.amp.custom_bwd(lambda ctx, g: g * 2)
        messages = [str(w.message) for w in caught if w.category is FutureWarning]
        assert messages == [
            "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
            "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
            "`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
            "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
        ]
        ctx = type("Ctx", (), {})()
        assert fwd(ctx, lib.ones(2)).tolist() == [2.0, 2.0]
        assert ctx._fwd_used_autocast is False
        assert bwd(ctx, lib.ones(2)).tolist() == [2.0, 2.0]

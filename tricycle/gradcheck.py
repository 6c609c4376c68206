"""Check a function's gradients against central finite differences, in float64.

``gradcheck(fn, *inputs)`` is how to test an op you wrote yourself (and how tricycle tests its
own): it runs ``fn`` on float64 copies of the inputs, backpropagates a fixed random weighting
of the output (so every output element sends a different gradient back), and compares each
input's gradient with

    (f(x + eps e_k) - f(x - eps e_k)) / (2 eps)        for every element k of that input,

where f is the same weighted sum of the output. It returns True, or raises ``GradcheckError``
naming the input, the element that is furthest off, and the two values there.
"""

import importlib

import numpy as np

from tricycle import backend, checks
from tricycle.backend import is_float
from tricycle.tensor import Tensor, no_grad


class GradcheckError(AssertionError):
    """A gradient that differs from finite differences (an AssertionError, for tests)."""


@checks.arguments(
    eps=checks.positive,
    atol=checks.non_negative,
    rtol=checks.non_negative,
    seed=checks.non_negative_int,
)
def gradcheck(
    fn,
    *inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    wrt=None,
    seed: int = 0,
) -> bool:
    """Compare the gradients of ``fn(*inputs)`` with central finite differences.

    Args:
        fn: takes Tensors, returns one Tensor (of any shape).
        inputs: Tensors, arrays or numbers. Floating inputs are copied to float64 (on their
            device) and checked; integer and boolean ones (labels, masks) are passed as they
            are, and never differentiated. A Tensor with ``requires_grad=False`` is a constant.
        eps: the finite-difference step.
        atol, rtol: an element passes when |analytic - numeric| <= atol + rtol * |numeric|,
            atol raised by the rounding error of the finite differences themselves,
            4 e sum(|w fn|) / eps (e float64's epsilon, w the output's random weights): the
            weighted sum they difference is only that exact, so a large output (a sum of
            x ** 8 terms, say) cannot give a small gradient element to atol's digits.
        wrt: indices of the inputs to check (default: every floating input).
        seed: seeds the random weighting of the output.

    Returns True if every checked gradient matches. Raises ``GradcheckError`` otherwise, and
    ``TypeError`` if ``fn`` does not compute in float64 (a float32 output would make the
    finite differences meaningless).
    """
    arrays, checked = [], []
    for i, value in enumerate(inputs):
        constant = isinstance(value, Tensor) and not value.requires_grad
        array = value.array if isinstance(value, Tensor) else value
        if not (isinstance(array, np.ndarray) or backend.is_cupy_array(array)):
            array = np.asarray(array)
        if is_float(array.dtype):
            # a C-ordered copy: the caller's data is never perturbed, and a flat view of it is
            # the array itself (the finite differences nudge it through reshape(-1))
            array = array.astype(np.float64, order="C")
            if not constant:
                checked.append(i)
        arrays.append(array)
    if wrt is None:
        wrt = checked
        if not wrt:
            raise ValueError(
                "gradcheck: no input to check: pass floating arrays or Tensors with "
                "requires_grad=True (a Tensor without it is a constant), or name inputs in wrt"
            )
    else:
        wrt = [wrt] if isinstance(wrt, int) else list(wrt)
        for i in wrt:
            if not 0 <= i < len(arrays) or not is_float(arrays[i].dtype):
                raise ValueError(
                    f"gradcheck: wrt={wrt} names input {i}, which is not a floating input "
                    f"(there are {len(arrays)} inputs)"
                )

    def evaluate(values, requires_grad=()) -> tuple[Tensor, list[Tensor]]:
        tensors = [Tensor(v, requires_grad=k in requires_grad) for k, v in enumerate(values)]
        out = fn(*tensors)
        if not isinstance(out, Tensor):
            raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
        if out.dtype != np.float64:
            raise TypeError(
                f"gradcheck: fn returned dtype {out.dtype}; it must compute in float64 from "
                "float64 inputs for finite differences to be accurate"
            )
        return out, tensors

    out, tensors = evaluate(arrays, requires_grad=wrt)
    xp = out.xp
    weights = xp.asarray(np.random.default_rng(seed).normal(size=out.shape))

    def weighted_sum(values) -> float:
        with no_grad():
            return float(xp.sum(evaluate(values)[0].array * weights))

    if out.requires_grad:
        out.backward(weights)
    analytic = {}  # host copies, taken before any input is perturbed
    for i in wrt:
        grad = tensors[i].grad
        if grad is None:  # fn does not depend on this input
            analytic[i] = np.zeros(arrays[i].shape)
        else:
            analytic[i] = np.array(backend.to_host_array(grad.array), dtype=np.float64)
    magnitude = float(xp.sum(xp.abs(out.array * weights)))
    rounding = 4 * np.finfo(np.float64).eps * magnitude / eps
    for i in wrt:
        numeric = _numerical_grad(weighted_sum, arrays, i, eps)
        _compare(i, analytic[i], numeric, atol + rounding, rtol)
    return True


def _numerical_grad(scalar_fn, arrays, i: int, eps: float) -> np.ndarray:
    """d scalar_fn(arrays) / d arrays[i] by central differences, perturbing in place."""
    x = arrays[i]
    flat = x.reshape(-1)  # a view: x is a fresh contiguous float64 copy
    grad = np.zeros(x.size)
    for k in range(x.size):
        old = flat[k].item()
        flat[k] = old + eps
        up = scalar_fn(arrays)
        flat[k] = old - eps
        down = scalar_fn(arrays)
        flat[k] = old
        grad[k] = (up - down) / (2 * eps)
    return grad.reshape(x.shape)


def _compare(i: int, analytic: np.ndarray, numeric: np.ndarray, atol: float, rtol: float):
    """Raise GradcheckError naming the worst element, if any element is out of tolerance."""
    error = np.abs(analytic - numeric)
    excess = np.asarray(error - (atol + rtol * np.abs(numeric)))
    excess[np.isnan(analytic) != np.isnan(numeric)] = np.inf
    if not (excess > 0).any():
        return
    worst = tuple(int(k) for k in np.unravel_index(int(np.argmax(excess)), analytic.shape))
    n_bad = int((excess > 0).sum())
    raise GradcheckError(
        f"gradcheck: the gradient of input {i} (shape {analytic.shape}) differs from finite "
        f"differences at {n_bad} of {analytic.size} element(s); worst at index {worst}: "
        f"analytic {float(analytic[worst]):.8g}, numeric {float(numeric[worst]):.8g} "
        f"(|difference| {float(error[worst]):.3g} > atol {atol:g} + rtol {rtol:g} * |numeric|)"
    )


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **flags) -> bool:  # fmt: skip
    """torch.autograd.gradgradcheck: the second derivatives of ``func(*inputs)``, as
    ``gradcheck`` of its backward pass. The function of the inputs that require grad and of
    the output gradients ``grad_outputs`` (random, seeded, when None) giving the inputs'
    gradients, taken with ``create_graph=True`` and flattened into one vector, is checked
    against finite differences in float64. torch's other flags change nothing. True, or on
    a mismatch ``GradcheckError`` (False without ``raise_exception``)."""
    from tricycle import ops

    autograd = importlib.import_module("tricycle.autograd")  # by name: it imports this module

    args = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    where = [i for i, x in enumerate(args) if isinstance(x, Tensor) and x.requires_grad]
    if not where:
        raise ValueError("gradgradcheck expects at least one input tensor to require gradient")
    with no_grad():
        outs = func(*args)
    outs = (outs,) if isinstance(outs, Tensor) else tuple(outs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [Tensor(out.xp.asarray(rng.normal(size=out.shape)), requires_grad=True)
                        for out in outs]  # fmt: skip
    grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n = len(where)

    def backward_pass(*tensors):
        with autograd.enable_grad():  # (finite differences evaluate it under no_grad)
            xs = [x if x.requires_grad else x.detach().requires_grad_(True) for x in tensors[:n]]
            full = list(args)
            for i, x in zip(where, xs):
                full[i] = x
            ys = func(*full)
            grads = autograd.grad(ys, xs, list(tensors[n:]), create_graph=True,
                                  allow_unused=True, materialize_grads=True)  # fmt: skip
            return ops.concatenate([g.reshape(-1) for g in grads])

    try:
        gradcheck(backward_pass, *(args[i] for i in where), *grad_outputs, eps=eps, atol=atol,
                  rtol=rtol)  # fmt: skip
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True

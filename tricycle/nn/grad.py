"""``torch.nn.grad``: the gradients of ``F.conv1d``/``conv2d``/``conv3d`` with respect to their
input and weight, given the gradient of their output, as torch's:

- ``conv{n}d_input(input_size, weight, grad_output, stride, padding, dilation, groups)`` is the
  transposed convolution of grad_output with the weight, its output padding chosen so that
  the result has ``input_size`` (the batch and channel axes included); differentiable, as a
  composition of ``F.conv_transpose{n}d``;
- ``conv{n}d_weight(input, weight_size, grad_output, ...)`` is the weight's gradient, read
  through tricycle's conv backward (``tricycle.autograd.grad`` of the convolution of
  ``input``): a value, with no graph of its own (a convolution has no second-derivative
  rule: ``tricycle.second_order_rules``).
"""

from tricycle import autograd
from tricycle.nn import functional as F
from tricycle.tensor import Tensor, as_tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]  # fmt: skip


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, list | tuple) else (value,) * n


def _input(n: int, input_size, weight, grad_output, stride, padding, dilation, groups):
    op = f"torch.nn.grad.conv{n}d_input"
    w, dy = as_tensor(weight), as_tensor(grad_output)
    size = tuple(input_size)
    if len(size) != n + 2 or dy.ndim != n + 2:
        raise ValueError(f"{op}: expected input_size and grad_output of {n + 2} dims (N, C, "
                         f"*{n} spatial), got {size} and {dy.shape}")  # fmt: skip
    stride, padding, dilation = (_tuple(v, n) for v in (stride, padding, dilation))
    smallest = [(o - 1) * s - 2 * p + d * (k - 1) + 1 for o, s, p, d, k in
                zip(dy.shape[2:], stride, padding, dilation, w.shape[2:])]  # fmt: skip
    extra = [want - got for want, got in zip(size[2:], smallest)]
    if any(not 0 <= e < max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise ValueError(f"{op}: input_size {size} does not fit grad_output {dy.shape} with "
                         f"weight {w.shape}, stride {stride}, padding {padding} and dilation "
                         f"{dilation}")  # fmt: skip
    transpose = getattr(F, f"conv_transpose{n}d")
    return transpose(dy, w, None, stride, padding, tuple(extra), groups, dilation)


def _weight(n: int, input, weight_size, grad_output, stride, padding, dilation, groups):  # noqa: A002
    x, dy = as_tensor(input).detach(), as_tensor(grad_output)
    w = Tensor(x.xp.zeros(tuple(weight_size), dtype=x.dtype), requires_grad=True)
    y = getattr(F, f"conv{n}d")(x, w, None, stride, padding, dilation, groups)
    if y.shape != dy.shape:
        raise ValueError(f"torch.nn.grad.conv{n}d_weight: grad_output {dy.shape} is not the "
                         f"shape of the convolution's output {y.shape}")  # fmt: skip
    return autograd.grad(y, w, dy.detach())[0]


def _pair(n: int):
    def conv_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _input(n, input_size, weight, grad_output, stride, padding, dilation, groups)

    def conv_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1,  # noqa: A002
                    groups=1):  # fmt: skip
        return _weight(n, input, weight_size, grad_output, stride, padding, dilation, groups)

    for function, wrt in ((conv_input, "input"), (conv_weight, "weight")):
        function.__name__ = function.__qualname__ = f"conv{n}d_{wrt}"
        function.__doc__ = f"``torch.nn.grad.conv{n}d_{wrt}``: d(conv{n}d) / d({wrt})."
    return conv_input, conv_weight


conv1d_input, conv1d_weight = _pair(1)
conv2d_input, conv2d_weight = _pair(2)
conv3d_input, conv3d_weight = _pair(3)

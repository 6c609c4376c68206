"""``torch.nn.utils.stateless``: torch's name, from before ``torch.func``, for a call of a
module with other tensors in place of its parameters and buffers. ``functional_call`` is
``tricycle.func.functional_call`` under that old name, with torch's FutureWarning."""

import warnings

from tricycle import func

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):  # fmt: skip
    """``module(*args, **kwargs)`` with the tensors of ``parameters_and_buffers`` (a dict
    {name: Tensor}) in place of its own for this call: ``tricycle.func.functional_call``.
    ``args`` may be one argument that is not a tuple, or None for none."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will "
        "be removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    args = () if args is None else args
    return func.functional_call(module, parameters_and_buffers, args, kwargs,
                                tie_weights=tie_weights, strict=strict)  # fmt: skip

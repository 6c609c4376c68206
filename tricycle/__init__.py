"""tricycle: a small, readable, fast deep-learning library on numpy and cupy.

``import tricycle as tc`` gives the Tensor, the factories, the common ops as functions and
the tools around them::

    import tricycle as tc

    tc.manual_seed(0)
    x = tc.randn(4, 3, requires_grad=True)
    y = tc.softmax(tc.einsum("ij,jk->ik", x, tc.ones(3, 5))).sum()
    y.backward()  # x.grad

Every module stays importable on its own (``from tricycle.tensor import Tensor`` gives a
Tensor with its operators). Importing tricycle loads nothing but this file: each name below
is imported from its module the first time it is used, so ``import tricycle.tensor`` loads the
engine alone. Nothing starts and no library setting changes; cupy is imported only when a
tensor is moved to a GPU."""

import importlib
import sys
import types

__version__ = "0.1.0"

_PUBLIC = {  # name -> (module, attribute): imported on first use (PEP 562)
    "argsort": ("tricycle.ops", "argsort"),
    "chunk": ("tricycle.ops", "chunk"),
    "cumsum": ("tricycle.reduce", "cumsum"),
    "draw": ("tricycle.draw", "draw"),
    "permute": ("tricycle.ops", "permute"),
    "sort": ("tricycle.ops", "sort"),
    "Accelerator": ("tricycle.apps.accelerator", "Accelerator"),
    "Einsum": ("tricycle.einsum", "Einsum"),
    "GeLU": ("tricycle.activation", "GeLU"),
    "GradcheckError": ("tricycle.gradcheck", "GradcheckError"),
    "LeakyReLU": ("tricycle.activation", "LeakyReLU"),
    "LogSoftmax": ("tricycle.functions", "LogSoftmax"),
    "ReLU": ("tricycle.activation", "ReLU"),
    "Softmax": ("tricycle.functions", "Softmax"),
    "Swish": ("tricycle.activation", "Swish"),
    "Tensor": ("tricycle.tensor", "Tensor"),
    "abs": ("tricycle.unary", "abs"),
    "arange": ("tricycle.factories", "arange"),
    "cat": ("tricycle.ops", "cat"),
    "checks_pending": ("tricycle.deferred", "checks_pending"),
    "clip": ("tricycle.unary", "clip"),
    "concatenate": ("tricycle.ops", "concatenate"),
    "cos": ("tricycle.unary", "cos"),
    "einsum": ("tricycle.einsum", "einsum"),
    "exp": ("tricycle.unary", "exp"),
    "expand_dims": ("tricycle.ops", "expand_dims"),
    "eye": ("tricycle.factories", "eye"),
    "full": ("tricycle.factories", "full"),
    "full_like": ("tricycle.factories", "full_like"),
    "gradcheck": ("tricycle.gradcheck", "gradcheck"),
    "linspace": ("tricycle.factories", "linspace"),
    "log": ("tricycle.unary", "log"),
    "manual_seed": ("tricycle.random", "manual_seed"),
    "masked_fill": ("tricycle.ops", "masked_fill"),
    "max": ("tricycle.reduce", "max"),
    "maximum": ("tricycle.binary", "maximum"),
    "mean": ("tricycle.reduce", "mean"),
    "min": ("tricycle.reduce", "min"),
    "minimum": ("tricycle.binary", "minimum"),
    "no_grad": ("tricycle.tensor", "no_grad"),
    "ones": ("tricycle.factories", "ones"),
    "ones_like": ("tricycle.factories", "ones_like"),
    "raise_pending_errors": ("tricycle.deferred", "raise_pending_errors"),
    "rand": ("tricycle.factories", "rand"),
    "rand_like": ("tricycle.factories", "rand_like"),
    "randint": ("tricycle.factories", "randint"),
    "randn": ("tricycle.factories", "randn"),
    "randn_like": ("tricycle.factories", "randn_like"),
    "repeat": ("tricycle.ops", "repeat"),
    "reshape": ("tricycle.ops", "reshape"),
    "sigmoid": ("tricycle.unary", "sigmoid"),
    "sin": ("tricycle.unary", "sin"),
    "split": ("tricycle.ops", "split"),
    "sqrt": ("tricycle.unary", "sqrt"),
    "squeeze": ("tricycle.ops", "squeeze"),
    "stack": ("tricycle.ops", "stack"),
    "sum": ("tricycle.reduce", "sum"),
    "swapaxes": ("tricycle.ops", "swapaxes"),
    "tanh": ("tricycle.unary", "tanh"),
    "to_tensor": ("tricycle.tensor", "to_tensor"),
    "transpose": ("tricycle.ops", "transpose"),
    "tril": ("tricycle.factories", "tril"),
    "triu": ("tricycle.factories", "triu"),
    "var": ("tricycle.reduce", "var"),
    "where": ("tricycle.ops", "where"),
    "zeros": ("tricycle.factories", "zeros"),
    "zeros_like": ("tricycle.factories", "zeros_like"),
    "softmax": ("tricycle.functional", "softmax"),
    "log_softmax": ("tricycle.functional", "log_softmax"),
    "relu": ("tricycle.functional", "relu"),
    "leaky_relu": ("tricycle.functional", "leaky_relu"),
    "gelu": ("tricycle.functional", "gelu"),
    "silu": ("tricycle.functional", "silu"),
}


def __getattr__(name: str):
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'tricycle' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next lookup finds it directly
    return value


class _Namespace(types.ModuleType):
    """The package's module type: a public name that is also a submodule's (``einsum``) keeps
    naming the function when the submodule is imported (the import system would set the
    package's attribute to the submodule), as it did when this file imported it eagerly."""

    def __setattr__(self, name, value):
        if name in _PUBLIC and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Namespace


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = [
    "Accelerator",
    "Einsum",
    "GradcheckError",
    "Tensor",
    "__version__",
    "abs",
    "arange",
    "argsort",
    "cat",
    "chunk",
    "checks_pending",
    "clip",
    "concatenate",
    "cos",
    "cumsum",
    "draw",
    "einsum",
    "exp",
    "expand_dims",
    "eye",
    "full",
    "full_like",
    "gelu",
    "gradcheck",
    "leaky_relu",
    "linspace",
    "log",
    "log_softmax",
    "manual_seed",
    "masked_fill",
    "max",
    "maximum",
    "mean",
    "permute",
    "min",
    "minimum",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "raise_pending_errors",
    "randn_like",
    "relu",
    "repeat",
    "reshape",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "sort",
    "split",
    "sqrt",
    "squeeze",
    "stack",
    "sum",
    "swapaxes",
    "tanh",
    "to_tensor",
    "transpose",
    "tril",
    "triu",
    "var",
    "where",
    "zeros",
    "zeros_like",
]

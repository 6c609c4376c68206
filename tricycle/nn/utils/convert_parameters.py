"""torch.nn.utils' ``parameters_to_vector`` and ``vector_to_parameters``: a model's parameters
as one flat vector and back, as optimisers outside the usual loop want them (a line search,
an evolution strategy, a Hessian-vector product)::

    vec = parameters_to_vector(model.parameters())      # (P,): differentiable
    vector_to_parameters(vec - lr * step, model.parameters())

The vector lists each parameter's values in row-major order, one after the other, in the
order given. ``vector_to_parameters`` writes into the parameters in place (their dtype and
device stay; no graph is recorded), so an optimiser that holds them keeps them; unlike
torch's, a vector whose length is not the parameters' total size is an error.
"""

from collections.abc import Iterable

from tricycle import backend, ops
from tricycle.nn.utils.clip_grad import _parameters
from tricycle.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable) -> Tensor:
    """The parameters (an iterable of Tensors, a Tensor or a layer) flattened and joined
    into one vector (P,), differentiable in each: all must be on one device."""
    owner = "parameters_to_vector"
    params = _parameters(owner, parameters)
    if not params:
        raise ValueError(f"{owner}: got no parameters to join")
    backend.check_same_device(owner, *(p.array for p in params))
    return ops.concatenate([p.reshape(-1) for p in params])  # (P,)


def vector_to_parameters(vec: Tensor, parameters: Iterable) -> None:
    """Write the vector ``vec`` (P,), P the parameters' total size, into the parameters in
    turn, in place: each takes its next ``size`` values in its own shape and dtype."""
    owner = "vector_to_parameters"
    if not isinstance(vec, Tensor):
        raise TypeError(f"{owner}: vec must be a Tensor, got a {type(vec).__name__}")
    params = _parameters(owner, parameters)
    total = sum(p.size for p in params)
    if vec.ndim != 1 or vec.size != total:
        raise ValueError(
            f"{owner}: vec must be a vector of the parameters' total size {total} (sizes "
            f"{[p.size for p in params]}), got shape {vec.shape}"
        )
    backend.check_same_device(owner, vec.array, *(p.array for p in params))
    start = 0
    for p in params:
        p.array[...] = vec.array[start : start + p.size].reshape(p.shape)
        start += p.size

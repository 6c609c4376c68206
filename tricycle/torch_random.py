"""torch's random draws on tricycle's generator: ``bernoulli``, ``normal``, ``randint_like`` and
``Generator``.

As every draw of tricycle's, they are made on the host from tricycle's generator (seeded by
``tricycle.manual_seed``) or the ``generator=`` given, then moved to the device asked for, so
that a seed repeats them on every device; they are not torch's numbers for the same seed.
A draw carries no gradient (torch's ``normal`` and ``bernoulli`` pass a gradient of 0): a
sample that the gradient flows through is ``mean + std * tricycle.randn_like(mean)``.

``Generator`` is a numpy ``Generator``, what every ``generator=`` of tricycle takes, with
torch's methods: ``tricycle.Generator().manual_seed(0)`` draws the numbers that tricycle's
own generator draws after ``tricycle.manual_seed(0)``.
"""

import numpy as np

from tricycle import backend, checks, factories
from tricycle.graph import Node
from tricycle.torch_functions import no_out, tensor_input

DEFAULT_SEED = 67280421310721  # torch's: a new Generator draws the same numbers until seeded


class Generator(np.random.Generator):
    """torch.Generator(device="cpu"): a generator of its own for ``generator=`` arguments,
    seeded with torch's default seed until ``manual_seed``. It draws on the host, whatever
    its ``device`` (a ``tricycle.device``, kept for the code that reads it, as torch's)."""

    def __init__(self, device="cpu"):
        backend.parse_device(device, "Generator")  # an error here names the Generator
        super().__init__(np.random.PCG64(DEFAULT_SEED))
        self.device, self._seed = backend.device(device), DEFAULT_SEED

    def manual_seed(self, seed: int) -> "Generator":
        """Seed with an integer >= 0 (as ``tricycle.manual_seed``); returns this generator."""
        checks.non_negative_int("Generator.manual_seed", "seed", seed)
        self.bit_generator.state = np.random.PCG64(seed).state
        self._seed = int(seed)
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed chosen."""
        return self.manual_seed(np.random.SeedSequence().entropy % 2**64).initial_seed()

    def initial_seed(self) -> int:
        """The seed of the last ``manual_seed`` (or ``seed``), or torch's default."""
        return self._seed

    def get_state(self) -> dict:
        """The state to give ``set_state`` to draw again from here (numpy's bit generator
        state, a dict, where torch's is a ByteTensor)."""
        return self.bit_generator.state

    def set_state(self, new_state: dict) -> "Generator":
        """Draw again from a state that ``get_state`` gave; returns this generator."""
        if not isinstance(new_state, dict):
            checks.fail("Generator.set_state", "new_state", "a dict from get_state()", new_state,
                        TypeError)  # fmt: skip
        self.bit_generator.state = new_state
        return self


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002 - torch's names
    """torch.bernoulli: 1 with probability p, else 0, in the shape and dtype of ``input``,
    whose values are the probabilities (or ``p``, a number, is); ``Tensor.bernoulli``."""
    no_out("bernoulli", out)
    return tensor_input("bernoulli", input).bernoulli(p, generator=generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad: bool = False):  # fmt: skip
    """torch.normal: draws from N(mean, std^2), ``mean`` and ``std`` numbers or float tensors
    (broadcast; the result has their shape, dtype and device); of two numbers, give ``size``
    (and ``dtype``, ``device``, ``requires_grad`` as for ``tricycle.randn``)."""
    no_out("normal", out)
    tensors = [v for v in (mean, std) if isinstance(v, Node)]
    for name, value in (("mean", mean), ("std", std)):
        if not isinstance(value, Node):
            checks.real("normal", name, value, 0 if name == "std" else -np.inf)
        elif not backend.is_float(value.dtype):
            checks.fail("normal", f"{name}'s dtype", "a float dtype", value.dtype, TypeError)
    if isinstance(std, Node) and (low := backend.to_host_array(std.array).min(initial=0)) < 0:
        raise ValueError(f"normal: std must be >= 0 everywhere, got {low}")
    if not tensors:
        if size is None:
            raise TypeError("normal: of a number mean and std, give size: normal(0.0, 1.0, (2, 3))")
        device = "cpu" if device is None else device
        draws = factories.randn(size, dtype=dtype, device=device, generator=generator)
        return draws.new(draws.array * std + mean, requires_grad=requires_grad)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal: size, dtype, device and requires_grad are for a number mean and "
                        "std; a tensor's shape, dtype and device make the result")  # fmt: skip
    xp = backend.check_same_device("normal", *(t.array for t in tensors))
    try:
        shape = np.broadcast_shapes(*(np.shape(getattr(v, "array", v)) for v in (mean, std)))
    except ValueError:
        shapes = tuple(np.shape(getattr(v, "array", v)) for v in (mean, std))
        checks.fail("normal", "the shapes of mean and std", "shapes that broadcast", shapes)
    dtype = np.result_type(*(t.dtype for t in tensors))
    draws = factories.randn(shape, dtype=dtype, device=tensors[0].device, generator=generator)
    out = getattr(mean, "array", mean) + getattr(std, "array", std) * draws.array
    return tensors[0].new(xp.asarray(out, dtype=dtype), requires_grad=False)


def randint_like(input, low=None, high=None, *, dtype=None, device=None,  # noqa: A002
                 requires_grad: bool = False, generator=None, memory_format=None):  # fmt: skip
    """torch.randint_like: integers drawn from [low, high) (``randint_like(x, high)``: from
    [0, high)) in the shape of ``input``, of its dtype and device unless given."""
    x = tensor_input("randint_like", input)
    if low is None and high is None:
        raise TypeError("randint_like: give high (randint_like(x, 10)) or low and high")
    low, high = (0, low) if high is None else (0 if low is None else low, high)
    dtype = x.dtype if dtype is None else dtype
    device = x.device if device is None else device
    return factories.randint(low, high, x.shape, dtype=dtype, requires_grad=requires_grad,
                             device=device, generator=generator)  # fmt: skip

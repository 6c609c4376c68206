"""ZeRO stage 1: an optimiser's state sharded over the ranks of a data-parallel run.

Plain data parallelism (``tricycle.parallel.distributed``) keeps the whole optimiser state on every
rank: for AdamW two float32 moments per parameter, twice the model's size. Here each rank
updates, and keeps state for, only its rows of every parameter; the updated rows are then
all-gathered, so every rank ends each step with the parameters plain data parallelism would
give::

    reducer = DataParallel(model, world)
    optimiser = ZeroRedundancyOptimiser(AdamW(learning_rate=1e-3), model, world)
"""

import numpy as np

from tricycle import backend
from tricycle.optimisers import named_parameters
from tricycle.parallel.distributed import DistributedError, World
from tricycle.tensor import Tensor

__all__ = ["ZeroRedundancyOptimiser"]


class ZeroRedundancyOptimiser:
    """ZeRO stage 1: an optimiser's state (AdamW's two moments) sharded over the ranks.

    Every rank keeps the whole model and the averaged gradients (``DataParallel``) but
    updates only its shard, rows ``[r * n // N, (r + 1) * n // N)`` of each parameter with
    ``n`` rows (a 0-d parameter belongs to rank 0), with ``optimiser`` itself, which thus
    holds state for those rows only: 1/N of it per rank. The updated rows are then
    all-gathered, so every rank ends the step with the same parameters as plain data
    parallelism. Row shards keep each parameter's name and number of dimensions, so the
    optimiser's rules by name and shape (AdamW's weight-decay filter) apply unchanged.

    Use it where the optimiser is used: ``step()``, ``update(named, grad_multiplier)``,
    ``model.update(zero)``, ``learning_rate``, ``step_count``. ``state_dict()`` (a collective:
    call it on every rank) returns the whole state, in the wrapped optimiser's own format, on
    rank 0, so a checkpoint resumes at any world size, with or without ZeRO;
    ``load_state_dict`` takes that format and keeps this rank's rows.
    """

    def __init__(self, optimiser, parameters, world: World):
        self.optimiser, self.world = optimiser, world
        named = named_parameters(parameters)
        dtypes = {p.dtype for _, p in named}
        if len(dtypes) != 1:
            raise ValueError(
                f"ZeroRedundancyOptimiser: the parameters must share one dtype, got {dtypes}"
            )
        n_ranks = world.world_size
        # per parameter: its name, and the rows [lo, hi) that each rank owns
        self._rows = {}
        for name, p in named:
            if not p.array.flags.c_contiguous:
                raise ValueError(f"ZeroRedundancyOptimiser: parameter {name} is not contiguous")
            n = p.shape[0] if p.ndim else 1
            bounds = [(r * n // n_ranks, (r + 1) * n // n_ranks) for r in range(n_ranks)]
            if not p.ndim:
                bounds = [(0, 1)] + [(1, 1)] * (n_ranks - 1)
            self._rows[id(p)] = (name, p, bounds)
        # elements each rank sends in the all-gather: the padded length is the largest
        sizes = [sum(_row_size(p) * (b[r][1] - b[r][0]) for _, p, b in self._rows.values())
                 for r in range(n_ranks)]  # fmt: skip
        self._shard_size = max(max(sizes), 1)
        self._send = self._receive = None
        self._shard_tensors: dict[int, Tensor] = {}  # id(parameter) -> its rows' Tensor

    # ------------------------------------------------------------------ the optimiser's face
    @property
    def learning_rate(self) -> float:
        return self.optimiser.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        self.optimiser.learning_rate = value

    @property
    def step_count(self) -> int:
        return self.optimiser.step_count

    @step_count.setter
    def step_count(self, value: int) -> None:  # a failed capture puts the count back
        self.optimiser.step_count = value

    def fuses(self) -> bool:
        """Whether the wrapped optimiser updates in fused kernels (a CUDA graph can hold the
        step: the update, then the all-gather, both recorded)."""
        fuses = getattr(self.optimiser, "fuses", None)
        return bool(fuses and fuses())

    @property
    def state(self) -> dict:
        """The wrapped optimiser's state: this rank's rows."""
        return self.optimiser.state

    def step(self) -> "ZeroRedundancyOptimiser":
        """Mark the start of a training iteration; returns self."""
        self.optimiser.step()
        return self

    def update(self, parameters, grad_multiplier=None) -> None:
        """Update this rank's rows of every parameter with a gradient, then all-gather the
        rows of the others."""
        self.optimiser.update(self._shards(parameters), grad_multiplier=grad_multiplier)
        self._all_gather()

    def fused_update(self, named: list, grad_multiplier=None) -> bool:
        """The wrapped optimiser's fused update on this rank's rows, then the all-gather;
        False (and nothing done) where it has no fused form."""
        if not self.optimiser.fused_update(self._shards(named), grad_multiplier):
            return False
        self._all_gather()
        return True

    def __call__(self, parameters) -> None:
        self.update(parameters)

    def state_bytes(self) -> int:
        """Bytes of optimiser state held by this rank."""
        return sum(
            value.nbytes
            for slots in self.optimiser.state.values()
            for value in slots.values()
            if hasattr(value, "nbytes")
        )

    # ------------------------------------------------------------------ shards
    def _shards(self, parameters) -> list[tuple[str, Tensor]]:
        """(name, Tensor) of this rank's rows of every parameter with a gradient: views, so
        the optimiser updates the parameter itself."""
        rank, shards = self.world.rank, []
        for name, p in named_parameters(parameters):
            if p.grad is None:
                continue
            if id(p) not in self._rows:
                raise DistributedError(
                    f"ZeroRedundancyOptimiser: parameter {name} (shape {p.shape}) was not "
                    "among the parameters it was made with"
                )
            lo, hi = self._rows[id(p)][2][rank]
            if hi > lo:
                rows = _as_rows(p.array)[lo:hi]
                shard = self._shard_tensors.get(id(p))  # one Tensor a shard: its state's owner
                if shard is None:
                    shard = self._shard_tensors[id(p)] = Tensor(rows, name=name)
                shard.array = rows  # the parameter's rows now (it may have moved device)
                grad = _as_rows(p.grad.array)[lo:hi]
                shard.grad = Tensor(grad, requires_grad=False)
                shards.append((name, shard))
        return shards

    def _all_gather(self) -> None:
        """Every rank's updated rows into every rank's parameters, in one all-gather."""
        params = [p for _, p, _ in self._rows.values()]
        xp = params[0].xp
        if self._send is None or backend.device_of(self._send) != params[0].device:
            self._send = xp.zeros(self._shard_size, dtype=params[0].dtype)
            self._receive = xp.empty((self.world.world_size, self._shard_size), params[0].dtype)
        offset = 0
        for _, p, bounds in self._rows.values():  # pack this rank's rows
            lo, hi = bounds[self.world.rank]
            n = (hi - lo) * _row_size(p)
            self._send[offset : offset + n] = _as_rows(p.array)[lo:hi].reshape(-1)
            offset += n
        request = self.world._engine(self._send).all_gather(self._send, self._receive)
        self.world.wait(request, f"the all-gather of parameters ({self._send.nbytes} bytes/rank)")
        for r in range(self.world.world_size):  # unpack the other ranks' rows
            offset = 0
            for _, p, bounds in self._rows.values():
                lo, hi = bounds[r]
                n = (hi - lo) * _row_size(p)
                if r != self.world.rank and n:
                    rows = _as_rows(p.array)[lo:hi]
                    rows[...] = self._receive[r, offset : offset + n].reshape(rows.shape)
                offset += n

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict | None:
        """The whole state in the wrapped optimiser's format, on rank 0 (None elsewhere).
        Every rank must call it."""
        parts = self.world.gather_object(self.optimiser.state_dict())
        if parts is None:
            return None
        shapes = {name: p.shape for name, p, _ in self._rows.values()}
        state = {k: v for k, v in parts[0].items() if not k.startswith("state/")}
        keys = dict.fromkeys(k for part in parts for k in part if k.startswith("state/"))
        for key in keys:
            values = [part[key] for part in parts if key in part]  # in rank order: row order
            name, _, slot = key[len("state/") :].rpartition("/")
            if slot == "step":  # a per-parameter count (Adam's), the same on every rank
                state[key] = values[0]
            else:
                state[key] = np.concatenate(values).reshape(shapes[name])
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore from a whole state (``state_dict()``'s, or a plain optimiser's): this
        rank keeps its rows of each parameter's arrays."""
        rows = {name: bounds[self.world.rank] for name, _, bounds in self._rows.values()}
        mine = {}
        for key, value in state.items():
            if not key.startswith("state/"):
                mine[key] = value
                continue
            name, _, slot = key[len("state/") :].rpartition("/")
            if name not in rows:
                raise ValueError(f"ZeroRedundancyOptimiser.load_state_dict: unknown {key}")
            lo, hi = rows[name]
            if hi > lo:
                mine[key] = value if slot == "step" else _as_rows(np.asarray(value))[lo:hi]
        self.optimiser.load_state_dict(mine)

    def __repr__(self) -> str:
        return f"ZeroRedundancyOptimiser({self.optimiser!r}, world_size={self.world.world_size})"


def _as_rows(array):
    """``array`` with at least one axis: a 0-d parameter as one row."""
    return array.reshape(1) if array.ndim == 0 else array


def _row_size(param) -> int:
    """Elements in one row of ``param`` (first axis)."""
    return param.size // param.shape[0] if param.ndim and param.shape[0] else 1

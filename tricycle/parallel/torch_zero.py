"""``torch.distributed.optim.ZeroRedundancyOptimizer``: any ``tricycle.optim`` optimizer with
its state sharded over the ranks (ZeRO stage 1), under torch's name and calls::

    from tricycle.distributed.optim import ZeroRedundancyOptimizer

    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=optim.AdamW, lr=3e-4)
    loss.backward(); optimizer.step()        # gradients averaged by DDP beforehand
    optimizer.consolidate_state_dict(to=0)   # on every rank
    if rank == 0: save(optimizer.state_dict())

**The partition** is torch's: in each parameter group, the parameters sorted by size, largest
first, each goes to the rank holding the fewest elements so far (the lowest rank on a tie).
Each rank builds ``optimizer_class`` over its own parameters only, group by group, so it holds
the state of about 1/N of them. ``step`` runs that optimizer, then every rank broadcasts the
parameters it updated, so all ranks end the step with the same weights as one optimizer over
all of them.

**Settings** live in ``param_groups`` (every parameter, as torch's): a change there (a
schedule's ``lr``) reaches the local optimizer at the next ``step``. ``state_dict()`` is the
plain optimizer's, numbered over all parameters, on the rank that ``consolidate_state_dict``
gathered it to: it loads into ``optimizer_class`` over the whole model, or into a
``ZeroRedundancyOptimizer`` at any world size. ``tricycle.parallel.zero`` is tricycle's own
ZeRO (AdamW's state sharded by rows, for ``Trainer``).
"""

import copy

from tricycle import checks
from tricycle.optim.optimizer import Optimizer
from tricycle.parallel import torch_distributed as dist

OWNER = "ZeroRedundancyOptimizer"


class ZeroRedundancyOptimizer(Optimizer):
    """An ``optimizer_class`` whose state is sharded over the ranks (torch's arguments).

    Args:
        params: an iterable of Tensors or of parameter groups (dicts), as any optimizer's.
        optimizer_class: the optimizer each rank runs over its shard (``optim.AdamW``).
        process_group: None, the world, or a group (``new_group``'s): the state is sharded
            over its ranks, which broadcast their parameters to one another.
        parameters_as_bucket_view: torch packs parameters into buckets to broadcast them in
            fewer calls; the result is the same, and here they go one by one.
        overlap_with_ddp: True (the step inside DDP's communication hook) is refused.
        **defaults: ``optimizer_class``'s settings (``lr``, ``betas``, ``weight_decay``...).
    """

    def __init__(
        self,
        params,
        optimizer_class: type,
        process_group=None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults,
    ):
        checks.boolean(OWNER, "parameters_as_bucket_view", parameters_as_bucket_view)
        if checks.boolean(OWNER, "overlap_with_ddp", overlap_with_ddp):
            raise NotImplementedError(
                f"{OWNER}: overlap_with_ddp=True (the step run inside DDP's communication "
                "hook) is not supported; step after backward, as with overlap_with_ddp=False"
            )
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(
                f"{OWNER}: optimizer_class must be a tricycle.optim optimizer class "
                f"(optim.AdamW), got {optimizer_class!r}"
            )
        self.process_group = process_group
        world = dist._member_of(OWNER, process_group)  # the World where None
        self.rank, self.world_size = world.rank, world.world_size  # the group's
        self.optimizer_class = optimizer_class
        self._gathered = None  # every rank's local state_dict, on the rank they went to
        self.optim = None  # the local optimizer: made once the groups are read
        super().__init__(params, defaults)
        self.optim = optimizer_class(self._partition()[self.rank], **defaults)
        self._sync_settings(self.optim.param_groups, self.param_groups)

    # ------------------------------------------------------------------ the partition
    def _partition(self) -> list[list[dict]]:
        """Per rank, a copy of every group holding that rank's parameters of it."""
        per_rank = [[] for _ in range(self.world_size)]
        sizes = [0] * self.world_size
        for group in self.param_groups:
            owned = [[] for _ in range(self.world_size)]
            for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                rank = sizes.index(min(sizes))
                owned[rank].append(p)
                sizes[rank] += p.numel()
            for rank, params in enumerate(owned):
                local = copy.copy(group)
                local["params"] = params
                local.pop("param_names", None)  # names are the whole group's
                per_rank[rank].append(local)
        return per_rank

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (as any optimizer's); its parameters are shared out among the ranks
        as the constructor's were, and this rank's join the local optimizer. The earlier
        groups keep their ranks (the partition is made group by group, in order)."""
        super().add_param_group(param_group)
        if self.optim is not None:
            self.optim.add_param_group(self._partition()[self.rank][-1])
            self._sync_settings(self.optim.param_groups[-1:], self.param_groups[-1:])

    # ------------------------------------------------------------------ the step
    def step(self, closure=None):
        """The local optimizer's step over this rank's parameters, with ``param_groups``'
        settings as they are now, then every rank's updated parameters broadcast from it;
        returns ``closure()``'s loss where given."""
        self._sync_settings(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure)
        for rank, groups in enumerate(self._partition()):
            for group in groups:
                for p in group["params"]:
                    dist.broadcast(p, group=self.process_group, group_src=rank)
        self._sync_settings(self.optim.param_groups, self.param_groups)
        return loss

    @staticmethod
    def _sync_settings(source: list[dict], target: list[dict]) -> None:
        """Copy every setting but the parameters from each group of ``source`` to the
        matching group of ``target``."""
        for a, b in zip(source, target):
            for key, value in a.items():
                if key not in ("params", "param_names"):
                    b[key] = value

    # ------------------------------------------------------------------ checkpoints
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's local optimizer state on rank ``to`` (of the process group),
        for ``state_dict()`` there. A collective: call it on every rank of the group."""
        world = dist._member_of(f"{OWNER}.consolidate_state_dict", self.process_group)
        dist._check_rank(f"{OWNER}.consolidate_state_dict", "to", to, world)
        self._sync_settings(self.param_groups, self.optim.param_groups)
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, self.optim.state_dict(), group=self.process_group)
        self._gathered = gathered if self.rank == to else None

    def state_dict(self) -> dict:
        """The whole optimizer's state_dict (``optimizer_class``'s layout, parameters numbered
        over every group), on the rank that ``consolidate_state_dict`` gathered to."""
        if self._gathered is None:
            raise RuntimeError(
                f"{OWNER}.state_dict: the optimizer state has not been consolidated on this "
                f"rank (rank {self.rank}); call consolidate_state_dict(to=...) on all ranks first"
            )
        whole = super().state_dict()  # the settings, and every parameter's global index
        index, position = {}, 0
        for group in self.param_groups:
            for p in group["params"]:
                index[id(p)] = position
                position += 1
        for local, groups in zip(self._gathered, self._partition()):
            for saved, group in zip(local["param_groups"], groups):
                for i, p in zip(saved["params"], group["params"]):
                    if i in local["state"]:
                        whole["state"][index[id(p)]] = local["state"][i]
        whole["state"] = dict(sorted(whole["state"].items()))
        return whole

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from a whole optimizer's state_dict (this one's, or ``optimizer_class``'s
        over the same parameters, saved at any world size): the settings of every group,
        and the state of this rank's parameters."""
        owner = f"{OWNER}.load_state_dict"
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise ValueError(f"{owner}: expected a dict with 'state' and 'param_groups'")
        sizes = [len(g["params"]) for g in self.param_groups]
        saved_sizes = [len(g["params"]) for g in state_dict["param_groups"]]
        if sizes != saved_sizes:
            raise ValueError(
                f"{owner}: the state holds groups of {saved_sizes} parameters, this optimizer "
                f"groups of {sizes}"
            )
        index, position = {}, 0
        for group in self.param_groups:
            for p in group["params"]:
                index[id(p)] = position
                position += 1
        local = {"state": {}, "param_groups": []}
        position = 0
        for saved, group in zip(state_dict["param_groups"], self._partition()[self.rank]):
            settings = {k: v for k, v in saved.items() if k not in ("params", "param_names")}
            numbers = []
            for p in group["params"]:
                numbers.append(position)
                if index[id(p)] in state_dict["state"]:
                    local["state"][position] = state_dict["state"][index[id(p)]]
                position += 1
            local["param_groups"].append({**settings, "params": numbers})
        self.optim.load_state_dict(local)
        self._sync_settings(self.optim.param_groups, self.param_groups)

"""torch's ``DeviceMesh`` and ``init_device_mesh`` (``torch.distributed.device_mesh``): the
ranks of the World laid out as an n-dimensional array, each dimension a group of ranks that
a DTensor shards over or replicates on (``tricycle.parallel.dtensor``), or that HYBRID_SHARD
shards within and replicates across (``tricycle.parallel.fsdp``).

A mesh holds every rank of the World, in the World's order. A dimension of all the World's
ranks is the World itself; a dimension of fewer is a sub-group along it
(``tricycle.parallel.subgroups``): making such a mesh is a collective of the World (an MPI
communicator split per dimension, as torch's ``init_device_mesh`` makes its groups), so every
rank makes it, in the same order. ``mesh["shard"]`` is the mesh of one dimension with its
group: no collective. A DTensor's moves along a dimension run over that dimension's group
(``group``, ``group_of``), so a (dp, tp) mesh shards on "tp" within each row of ranks.
"""

import math

import numpy as np

from tricycle.parallel import distributed
from tricycle.parallel.subgroups import group_of_one, new_groups

DEVICE_TYPES = ("cpu", "cuda")


def _world(device_type: str):
    """The World (joined as torch's ``init_device_mesh`` joins the default group)."""
    world = distributed._world
    if device_type == "cuda":
        return distributed.init(gpu=True)
    return world if world is not None else distributed.init()


class DeviceMesh:
    """torch's ``DeviceMesh(device_type, mesh, *, mesh_dim_names=None)``: ``mesh`` holds the
    ranks, an array-like of every rank of the World in order, of any shape (a dimension of
    fewer ranks than the World is a sub-group: see the module's docstring), or this rank
    alone (what a dimension of one rank gives: ``mesh["dp"]`` of a ``(1, N)`` mesh)."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names: tuple | None = None,
                 _groups: tuple | None = None, **_torch):  # fmt: skip
        if device_type not in DEVICE_TYPES:
            raise ValueError(
                f"DeviceMesh: device_type must be one of {DEVICE_TYPES}, got {device_type!r}"
            )
        world = _world(device_type)
        ranks = np.asarray(mesh.numpy() if hasattr(mesh, "numpy") else mesh, dtype=np.int64)
        if ranks.ndim == 0:
            ranks = ranks.reshape(1)
        flat = ranks.reshape(-1).tolist()
        alone = flat == [world.rank]  # this rank's own group of one: a sub-mesh's dimension
        if _groups is None and not alone and sorted(flat) != list(range(world.world_size)):
            raise RuntimeError(
                f"DeviceMesh: the mesh {ranks.tolist()} must hold each of the "
                f"{world.world_size} ranks of the World once, or this rank ({world.rank}) "
                "alone: make a mesh of every rank and take its dimension (mesh[name])"
            )
        if not alone and flat != sorted(flat):
            raise NotImplementedError(
                f"DeviceMesh: the mesh {ranks.tolist()} orders the ranks otherwise than the "
                "World; tricycle's collectives place a shard by the World's rank: list the "
                "ranks in order"
            )
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != ranks.ndim:
                raise RuntimeError(
                    "mesh_shape and mesh_dim_names should have same length! Found "
                    f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):"
                    f"{ranks.ndim}."
                )
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(
                    "Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                    f"mesh_dim_names {mesh_dim_names}"
                )
        self.device_type, self.mesh, self.mesh_dim_names = device_type, ranks, mesh_dim_names
        self.world = world
        self._groups = tuple(_groups) if _groups is not None else self._split()

    def _split(self) -> tuple:
        """The group of each dimension: the World where it holds every rank, this rank alone
        where it holds one, else this rank's sub-group along it (a collective of the World)."""
        groups = []
        for dim, n in enumerate(self.mesh.shape):
            if n == self.world.world_size:
                groups.append(self.world)
            elif n == 1:
                groups.append(group_of_one(self.world))
            else:  # the lines of ranks along ``dim``: one group each
                layout = np.moveaxis(self.mesh, dim, -1).reshape(-1, n).tolist()
                groups.append(new_groups(self.world, layout))
        return tuple(groups)

    # ------------------------------------------------------------------ sizes and ranks
    @property
    def ndim(self) -> int:
        return self.mesh.ndim

    @property
    def shape(self) -> tuple:
        return tuple(self.mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        return self.mesh.size if mesh_dim is None else self.mesh.shape[self._dim(mesh_dim)]

    def get_rank(self) -> int:
        return self.world.rank

    def get_coordinate(self) -> tuple:
        """This rank's index in the mesh."""
        return tuple(int(i) for i in np.argwhere(self.mesh == self.world.rank)[0])

    def get_local_rank(self, mesh_dim=None) -> int:
        """This rank's index along ``mesh_dim`` (a number or a name; optional on a 1-D mesh)."""
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(
                    f"Found the DeviceMesh have {self.ndim} dimensions",
                    "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
                )
            mesh_dim = 0
        return self.get_coordinate()[self._dim(mesh_dim)]

    def get_group(self, mesh_dim=None):
        """The process group of ``mesh_dim``: the World (written ``None``, as
        ``tricycle.distributed``'s collectives take it) where the dimension holds every rank,
        else its ``Group`` (``tricycle.parallel.subgroups``)."""
        if mesh_dim is None and self.ndim > 1:
            raise RuntimeError(
                f"get_group: the DeviceMesh has {self.ndim} dimensions; pass mesh_dim"
            )
        group = self.group(0 if mesh_dim is None else mesh_dim)
        return None if group is self.world else group

    def group(self, mesh_dim):
        """The World or the ``Group`` of ``mesh_dim``, whose collectives run along it."""
        return self._groups[self._dim(mesh_dim)]

    def _dim(self, mesh_dim) -> int:
        """``mesh_dim`` (a number, negative from the end, or a name) as a number."""
        if isinstance(mesh_dim, str):
            names = self.mesh_dim_names or ()
            if mesh_dim not in names:
                raise KeyError(
                    f"Invalid mesh_dim_names ('{mesh_dim}',) specified. Valid mesh_dim_names "
                    f"are {list(names)}."
                )
            return names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"DeviceMesh: mesh_dim {mesh_dim} of a {self.ndim}-D mesh")
        return mesh_dim % self.ndim

    def __getitem__(self, names) -> "DeviceMesh":
        """The sub-mesh of the dimensions named (a name or a tuple of names)."""
        names = (names,) if isinstance(names, str) else tuple(names)
        if self.mesh_dim_names is None:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        dims = [self._dim(name) for name in names]
        coordinate = self.get_coordinate()
        index = tuple(slice(None) if d in dims else coordinate[d] for d in range(self.ndim))
        sub = self.mesh[index]
        order = sorted(range(len(dims)), key=lambda i: dims[i])  # the sub-mesh's own order
        sub = np.transpose(sub, np.argsort(order)) if len(dims) > 1 else sub
        groups = tuple(self._groups[d] for d in dims)
        return DeviceMesh(self.device_type, sub, mesh_dim_names=names, _groups=groups)

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, DeviceMesh)
            and self.device_type == other.device_type
            and self.mesh_dim_names == other.mesh_dim_names
            and np.array_equal(self.mesh, other.mesh)
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.mesh_dim_names, self.mesh.tobytes(), self.shape))

    def __repr__(self) -> str:
        names = self.mesh_dim_names or tuple(f"dim{i}" for i in range(self.ndim))
        sizes = ", ".join(f"{name}={n}" for name, n in zip(names, self.shape))
        return f"DeviceMesh(({sizes}), '{self.device_type}')"

    # ------------------------------------------------------------------ for DTensor
    def group_of(self, mesh_dim: int) -> tuple:
        """(size, this rank's index) along ``mesh_dim``: its group's (the World, a sub-group
        or this rank alone), whose rank is this rank's coordinate along it."""
        group = self.group(mesh_dim)
        return group.world_size, int(group.rank)


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None, backend_override=None):
    """torch's ``init_device_mesh``: a DeviceMesh of ``mesh_shape`` over the World's ranks
    in order (joining the World first if needed, as torch joins the default group); a
    collective of the World where a dimension is a sub-group (every rank calls it)."""
    if backend_override is not None:
        raise NotImplementedError(
            "init_device_mesh: tricycle picks the engine: no backend_override"
        )
    mesh_shape = (mesh_shape,) if isinstance(mesh_shape, int) else tuple(mesh_shape)
    if mesh_dim_names is not None and len(tuple(mesh_dim_names)) != len(mesh_shape):
        raise RuntimeError(
            "mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names):"
            f" {len(tuple(mesh_dim_names))} and len(mesh_shape):{len(mesh_shape)}."
        )
    world = _world(device_type) if device_type in DEVICE_TYPES else None
    size = math.prod(mesh_shape)
    if world is not None and size != world.world_size:
        raise RuntimeError(
            f"Mesh should not be bigger than default world size {world.world_size}, but found "
            f"{size} ranks!"
            if size > world.world_size
            else f"init_device_mesh: a mesh of {size} ranks over a World of "
            f"{world.world_size}: tricycle's mesh holds every rank of the World"
        )
    ranks = np.arange(size).reshape(mesh_shape)
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)

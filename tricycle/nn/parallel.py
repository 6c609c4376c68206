"""``torch.nn.parallel``: where a script imports its data-parallel wrappers from
(``from torch.nn.parallel import DistributedDataParallel as DDP``).

``DataParallel`` is ``tricycle.nn.DataParallel`` (the whole batch through the module, on one
device: see ``tricycle.nn.data_parallel``) and ``data_parallel`` its one-call form.
``DistributedDataParallel`` is ``tricycle.parallel.DistributedDataParallel`` (torch's DDP on
the MPI world ``tricycle-run`` starts), imported on first use, so importing this module starts
no process group machinery."""

import importlib

from tricycle.module import Layer
from tricycle.nn.data_parallel import DataParallel

__all__ = ["DataParallel", "data_parallel"]  # and DistributedDataParallel, on first use


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):  # fmt: skip
    """torch.nn.parallel.data_parallel: ``module(*inputs, **module_kwargs)`` (one argument
    when ``inputs`` is not a tuple), on the module's device, as ``DataParallel`` runs it."""
    if not isinstance(module, Layer):
        raise TypeError(
            f"data_parallel: module must be a tricycle.nn.Module, got {type(module).__name__}"
        )
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))


def __getattr__(name: str):
    # DDP lives in the parallel layer, above tricycle.nn: the name is looked up by module name
    # on first use, as the package root looks up its names, and never imported from below
    if name == "DistributedDataParallel":
        return importlib.import_module("tricycle.parallel").DistributedDataParallel
    raise AttributeError(f"module 'tricycle.nn.parallel' has no attribute {name!r}")

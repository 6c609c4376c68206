"""``torch.nn.DataParallel``'s wrapper, for a script that wraps its model in it: the ImageNet
example's single-GPU path is ``model = torch.nn.DataParallel(model).cuda()``.

torch's DataParallel splits each batch over the GPUs of one process, runs a replica of the
module on each in a thread and gathers the outputs. tricycle runs the whole batch through the
module where its parameters are: the same outputs and gradients (a batch's gradient is the sum
of its parts'), on one device. The wrapper keeps torch's interface: the model is ``.module``,
its ``state_dict`` names carry torch's ``module.`` prefix, and ``to``/``cuda``/``train``/``eval``
reach it. To train on several GPUs, use ``tricycle.distributed.DistributedDataParallel`` in
processes started by ``tricycle-run``, as torch also advises over DataParallel.
"""

from tricycle.module import Layer

__all__ = ["DataParallel"]


class DataParallel(Layer):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: calling it calls
    ``module``. ``device_ids``, ``output_device`` and ``dim`` (where torch would split and
    gather) are kept for a script that reads them; they change nothing here."""

    def __init__(self, module: Layer, device_ids=None, output_device=None, dim: int = 0):
        if not isinstance(module, Layer):
            raise TypeError(
                f"DataParallel: module must be a tricycle.nn.Module, got {type(module).__name__}"
            )
        self.module = module
        self.device_ids = None if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

"""``torch.nn.utils.skip_init``: a module built without spending time on its initial values,
for code that overwrites them at once (a checkpoint loaded next)::

    layer = skip_init(nn.Linear, 6, 1)        # values unspecified, then
    layer.load_state_dict(saved)

torch builds the module on its "meta" device and allocates uninitialised memory, so its values
are unspecified. tricycle has no meta device: the module is built as usual, drawing its
initial values (which are as good as any unspecified ones), then moved to ``device`` if one is
given. Unlike torch's, the class need not take a ``device`` argument.
"""

import inspect

from tricycle.module import Layer

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameter values are unspecified (here: its own
    initial values); ``device=`` (torch's keyword) moves it there after it is built."""
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Layer)):
        raise RuntimeError(f"skip_init: Expected a Module; got {module_cls}")
    device = kwargs.pop("device", None)
    if "device" in inspect.signature(module_cls).parameters:
        kwargs["device"] = device
        device = None
    module = module_cls(*args, **kwargs)
    return module if device is None else module.to(device)

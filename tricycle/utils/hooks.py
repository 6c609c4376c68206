"""``torch.utils.hooks``: ``RemovableHandle`` for a hook registry of the user's own (a dict of
hooks, keyed by the handle's id, as torch's), on tricycle's handle
(``tricycle.module_hooks.RemovableHandle``, which a layer's ``register_*_hook`` returns: ids
from one count, ``remove()``, a context manager); ``unserializable_hook`` and
``warn_if_has_hooks`` as torch's."""

import warnings
import weakref

from tricycle.module_hooks import RemovableHandle as LayerHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def _ref(hooks: dict):
    """A weak reference to ``hooks`` where it takes one (an OrderedDict), else a strong one (a
    plain dict takes none)."""
    try:
        return weakref.ref(hooks)
    except TypeError:
        return lambda: hooks


class RemovableHandle(LayerHandle):
    """torch.utils.hooks.RemovableHandle(hooks_dict, *, extra_dict=None): ``remove()`` deletes
    the entry under ``id`` from ``hooks_dict`` (and from each extra dict)."""

    def __init__(self, hooks_dict: dict, *, extra_dict=None):
        self.id = next(LayerHandle._ids)
        self.hooks_dict_ref = _ref(hooks_dict)
        extras = [] if extra_dict is None else extra_dict
        extras = extras if isinstance(extras, list | tuple) else [extras]
        self.extra_dict_ref = tuple(_ref(extra) for extra in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None and self.id in hooks:
                del hooks[self.id]


def unserializable_hook(f):
    """torch.utils.hooks.unserializable_hook: marks ``f`` as a hook a tensor's pickle may drop
    without a warning; ``f`` itself."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """torch.utils.hooks.warn_if_has_hooks: warns when ``tensor`` has backward hooks that are
    not marked ``unserializable_hook`` (they are not saved with it)."""
    for hook in (getattr(tensor, "_backward_hooks", None) or {}).values():
        if not getattr(hook, "__torch_unserializable__", False):
            warnings.warn(
                f"backward hook {hook!r} on tensor will not be serialized. If this is expected, "
                "you can decorate the function with @torch.utils.hooks.unserializable_hook "
                "to suppress this warning",
                stacklevel=2,
            )

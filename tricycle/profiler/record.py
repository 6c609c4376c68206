"""``record_function``: a user's named range in a profile (torch.profiler's and
torch.autograd.profiler's)."""

from contextlib import ContextDecorator

from tricycle.profiler import recorder


class record_function(ContextDecorator):
    """A named range: the ops, backward steps and ranges run inside it on this thread nest
    under it in the profile (its self time is what they leave). A context manager or a
    decorator (each call of the function one range); without a recording profile it records
    nothing. ``args`` is torch's optional string, kept as ``self.args``."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name, self.args = name, args
        self._open = []  # (session, interval) of each entry not yet exited, innermost last

    def __enter__(self) -> "record_function":
        session = recorder.active()
        self._open.append((session, None if session is None else session.open(self.name)))
        return self

    def __exit__(self, *exc) -> bool:
        session, interval = self._open.pop()
        if session is not None and session is recorder.active():
            session.close(interval)
        return False

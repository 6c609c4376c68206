"""torchelastic's ``record``: a failing rank's error, written where the launcher reads it.

::

    from tricycle.distributed.elastic.multiprocessing.errors import record

    @record
    def main(): ...

An exception that leaves ``main`` is written, as torch writes it, to the JSON file named by
``$TORCHELASTIC_ERROR_FILE`` (``tricycle-run`` sets it on each rank when it keeps logs:
``--log_dir``, ``--max_restarts``...), then raised on: the launcher reads the file and names
the failing rank and its error. Without the variable nothing is written. ``sys.exit(0)``
inside ``main`` returns None, as torch's ``record`` does (a script run by ``runpy`` goes on).
"""

import faulthandler
import functools
import json
import os
import time
import traceback
import warnings

__all__ = ["ErrorHandler", "get_error_handler", "record"]


class ErrorHandler:
    """Writes an exception to ``$TORCHELASTIC_ERROR_FILE`` in torchelastic's layout."""

    def initialize(self) -> None:
        """Python's fault handler on (a crash prints every thread's stack), as torch's."""
        try:
            faulthandler.enable(all_threads=True)
        except (RuntimeError, ValueError, OSError) as error:  # no usable stderr
            warnings.warn(f"record: no fault handler: {error}", stacklevel=2)

    def record_exception(self, error: BaseException) -> None:
        """``{"message": {"message": "Kind: text", "extraInfo": {"py_callstack": ...,
        "timestamp": ...}}}`` into the error file, where one is named."""
        path = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if not path:
            return
        data = {
            "message": {
                "message": f"{type(error).__name__}: {error}",
                "extraInfo": {
                    "py_callstack": traceback.format_exc(),
                    "timestamp": str(int(time.time())),
                },
            }
        }
        try:
            with open(path, "w") as file:
                json.dump(data, file)
        except OSError as failure:
            warnings.warn(f"record: cannot write the error file {path}: {failure}", stacklevel=2)


def get_error_handler() -> ErrorHandler:
    """The default error handler."""
    return ErrorHandler()


def record(fn, error_handler: ErrorHandler | None = None):
    """``fn`` wrapped so that an exception leaving it is written to the error file (above)
    before it is raised on."""
    handler = error_handler or get_error_handler()

    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as ending:
            if ending.code in (0, None):
                return None
            raise
        except Exception as error:
            handler.record_exception(error)
            raise

    return recorded

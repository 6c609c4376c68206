"""``torch.distributed.rpc``'s one name a single-process script meets: ``RRef``.

tricycle has no remote procedure calls, so no value is ever a remote reference; ``RRef`` is
the class a script tests against (``isinstance(logits, torch.distributed.rpc.api.RRef)``, as
Raschka's ``helper_evaluate.py`` does before reading a remote model's output), and the test is
False. ``api`` is where torch defines it.
"""

import types


class RRef:
    """A reference to a value held by another process: never made in tricycle (no RPC)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "RRef: tricycle has no torch.distributed.rpc (no remote references); run the "
            "model in this process"
        )


api = types.SimpleNamespace(RRef=RRef)

"""What a fused op needs from the engine: one backward call shared by all its inputs.

A fused op (layer norm, attention, a convolution) computes every input's gradient in one
closed-form backward; the engine asks for them one input at a time (a node's ``back_fns``).
``shared_back_fns`` bridges the two.
"""

from collections.abc import Callable


def shared_back_fns(backward: Callable, n: int) -> tuple[Callable, ...]:
    """``n`` back_fns that share one call of ``backward(dout) -> (d_0, ..., d_{n-1})``.

    A fused op computes all its input gradients together; the engine asks for them one input
    at a time with the same ``dout``, so the result is kept for the current ``dout`` only.
    """
    memo: dict = {}

    def grad_of(i: int):
        def back_fn(dout):
            if memo.get("dout") is not dout:
                memo["dout"], memo["grads"] = dout, backward(dout)
            return memo["grads"][i]

        return back_fn

    return tuple(grad_of(i) for i in range(n))

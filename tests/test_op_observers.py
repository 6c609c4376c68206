"""``tricycle.op_observers``: the one way the profiler and the FLOP counter watch the op path.
An observer sees every op (its output, inputs, name and the frame of the function that made
it) and wraps the back_fns of a walk; observers compose in the order they were added, the
plain ``Node.__init__`` and walk are back when none is left, and a profile and a FLOP count
nest in either order with the same results as each alone."""

import sys

import numpy as np
import pytest

import tricycle as tc
from tricycle import backprop, op_observers
from tricycle.graph import Node
from tricycle.profiler import profile
from tricycle.utils.flop_counter import FlopCounterMode

PLAIN = (Node.__init__, backprop._walk)


def plain() -> bool:
    return (Node.__init__, backprop._walk) == PLAIN and op_observers.active() == ()


class Log(op_observers.Observer):
    """Writes what it sees into ``events`` as (its tag, what, detail)."""

    def __init__(self, tag: str, events: list):
        self.tag, self.events = tag, events

    def op(self, node, args, name, caller):
        self.events.append((self.tag, "op", name, len(args), caller.f_code.co_name))

    def back_fns(self, node, back_fns):
        tag, events = self.tag, self.events

        def wrap(back_fn):
            def logged(g):
                events.append((tag, "step", node.name))
                return back_fn(g)

            return logged

        return tuple(wrap(f) for f in back_fns)

    def begin_walk(self):
        self.events.append((self.tag, "begin"))
        return self.tag

    def end_walk(self, token):
        self.events.append((self.tag, "end", token))


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return tc.tensor(rng.normal(size=shape), requires_grad=True)


def made_through_new(x):
    # through x.new(...): the op's caller is the function that called new
    return x.new(np.exp(x.array), args=(x,), back_fns=(lambda g: g * np.exp(x.array),), name="exp")


def made_by_hand(x):
    return tc.Tensor(x.array * 2, args=(x,), back_fns=(lambda g: g * 2,), name="double")


def test_an_observer_sees_ops_with_their_caller_and_wraps_a_walk_that_restores_them():
    x, events = leaf(3), []
    log = Log("a", events)
    op_observers.add(log)
    try:
        assert op_observers.active() == (log,) and not plain()
        y = made_through_new(x)
        z = made_by_hand(y)
        assert events == [("a", "op", "exp", 1, "made_through_new"),
                          ("a", "op", "double", 1, "made_by_hand")]  # fmt: skip
        total = z.sum()
        own = (y.back_fns, z.back_fns)
        events.clear()
        total.backward(retain_graph=True)
        assert events == [("a", "begin"), ("a", "step", "sum"), ("a", "step", "double"),
                          ("a", "step", "exp"), ("a", "end", "a")]  # fmt: skip
        assert (y.back_fns, z.back_fns) == own  # a retained graph keeps its own back_fns
        np.testing.assert_allclose(x.grad.array, 2 * np.exp(x.array))
    finally:
        op_observers.remove(log)
    assert plain()
    events.clear()
    made_through_new(x).sum().backward()
    assert events == []


def test_observers_compose_in_the_order_added_and_a_failing_walk_still_ends():
    x, events = leaf(2), []
    first, second = Log("a", events), Log("b", events)
    op_observers.add(first)
    op_observers.add(second)
    op_observers.add(first)  # already active: nothing changes
    try:
        assert op_observers.active() == (first, second)
        y = made_by_hand(x)
        assert [e[0] for e in events] == ["a", "b"]
        events.clear()
        y.backward(tc.tensor(np.ones(2)))
        # b wrapped a's wrapper: b's step runs first; the walk's ends in reverse order
        assert events == [
            ("a", "begin"),
            ("b", "begin"),
            ("b", "step", "double"),
            ("a", "step", "double"),
            ("b", "end", "b"),
            ("a", "end", "a"),
        ]
        op_observers.remove(first)
        events.clear()

        def fails(g):
            raise ValueError("a failing back_fn")

        bad = tc.Tensor(x.array, args=(x,), back_fns=(fails,), name="bad")
        with pytest.raises(ValueError, match="failing back_fn"):
            bad.sum().backward()
        assert events[0] == ("b", "op", "bad", 1, sys._getframe().f_code.co_name)
        assert events[-1] == ("b", "end", "b") and bad.back_fns is not None
    finally:
        op_observers.remove(first)
        op_observers.remove(second)
    assert plain()


def model_step():
    x, w = leaf(4, 5), leaf(5, 3, seed=1)
    (x @ w).exp().sum().backward()


def test_a_profile_and_a_flop_count_nest_in_either_order_as_each_alone():
    with FlopCounterMode(display=False) as alone:
        model_step()
    with profile() as prof:
        model_step()
    keys = sorted(e.key for e in prof.key_averages())
    assert "exp_backward" in keys and "autograd::backward" in keys
    for counter_outside in (True, False):
        if counter_outside:
            with FlopCounterMode(display=False) as counter, profile() as prof:
                model_step()
        else:
            with profile() as prof, FlopCounterMode(display=False) as counter:
                assert len(op_observers.active()) == 2
                model_step()
        assert counter.get_flop_counts() == alone.get_flop_counts()
        nested = sorted(e.key for e in prof.key_averages())
        assert set(keys) <= set(nested)  # (the counter's set-up ops show when inside)
        assert plain()

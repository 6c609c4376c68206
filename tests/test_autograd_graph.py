"""torch.autograd.graph on tricycle (``tricycle.autograd_graph``, reached as
``tricycle.autograd.graph``): ``register_multi_grad_hook`` calls its function with torch's
gradients in both modes, per backward, until removed; ``save_on_cpu`` leaves the values as
torch's; ``saved_tensors_hooks`` is refused (saved tensors are closures here) and
``disable_saved_tensors_hooks`` raises its message as torch's; ``increment_version`` checks its
argument; the refusals are torch's kinds."""

import numpy as np
import pytest

import tricycle as tc
from tricycle.autograd_graph import (
    disable_saved_tensors_hooks,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
    saved_tensors_hooks,
)

torch = pytest.importorskip("torch")


def leaves(lib, n=3):
    return [lib.tensor(np.arange(2.0) + i, requires_grad=True) for i in range(n)]


def as_lists(grads):
    def one(g):
        if g is None:
            return None
        return (g.array if isinstance(g, tc.Tensor) else g.numpy()).tolist()

    return [one(g) for g in grads] if isinstance(grads, tuple | list) else one(grads)


def multi_hook_calls(lib, mode):
    """The calls a multi-grad hook on a, b, c sees over three backwards (torch's or ours)."""
    hook = register_multi_grad_hook if lib is tc else torch.autograd.graph.register_multi_grad_hook
    a, b, c = leaves(lib)
    calls = []
    handle = hook((a, b, c), lambda grads: calls.append(as_lists(grads)), mode=mode)
    (a * a * 2 + b).sum().backward()
    (a * 3).sum().backward()
    handle.remove()
    (a * b).sum().backward()  # removed: no call
    return calls


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_is_called_as_torchs(mode):
    ours, theirs = multi_hook_calls(tc, mode), multi_hook_calls(torch, mode)
    if mode == "any":  # the first gradient computed: which one is first is the engine's order
        assert len(ours) == len(theirs) == 2 and ours[1] == theirs[1] == [3.0, 3.0]
        assert ours[0] in ([0.0, 4.0], [1.0, 1.0]) and theirs[0] in ([0.0, 4.0], [1.0, 1.0])
    else:
        assert ours == theirs == [[[0.0, 4.0], [1.0, 1.0], None], [[3.0, 3.0], None, None]]


def test_multi_grad_hook_on_intermediate_tensors_and_with_a_block():
    a, b = leaves(tc, 2)
    h, k = a * 2, b * 3
    seen = []
    with register_multi_grad_hook([h, k], lambda grads: seen.append(as_lists(grads))):
        (h * k).sum().backward(retain_graph=True)
    (h * k).sum().backward()
    assert seen == [[[3.0, 6.0], [0.0, 2.0]]]  # d(h k)/dh = k, d(h k)/dk = h, one backward
    np.testing.assert_allclose(a.grad.array, [2 * 2 * 3.0, 2 * 2 * 6.0])  # two backwards


def test_multi_grad_hook_refusals_are_torchs():
    a, b = leaves(tc, 2)
    t, u = leaves(torch, 2)
    for hook, x, y in ((register_multi_grad_hook, a, b),
                       (torch.autograd.graph.register_multi_grad_hook, t, u)):  # fmt: skip
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            hook((x, y), print, mode="every")
        with pytest.raises(AssertionError, match="Expected gradient function to be set"):
            hook((x, y.detach()), print)


def test_save_on_cpu_changes_no_value():
    results = []
    for lib, block in ((tc, save_on_cpu), (torch, torch.autograd.graph.save_on_cpu)):
        x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        with block(pin_memory=False):
            y = (x.exp() * x).sum()
        y.backward()
        results.append((float(y.item()), as_lists(x.grad)))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_saved_tensors_hooks_are_refused_clearly():
    hooks = saved_tensors_hooks(lambda x: x * 2, lambda x: x)
    assert callable(hooks.pack_hook) and callable(hooks.unpack_hook)
    with pytest.raises(NotImplementedError, match="closures"):
        with hooks:
            pass


def test_disable_saved_tensors_hooks_raises_its_message_as_torchs():
    for _lib, (disable, hooks, on_cpu) in (
        (tc, (disable_saved_tensors_hooks, saved_tensors_hooks, save_on_cpu)),
        (torch, (torch.autograd.graph.disable_saved_tensors_hooks,
                 torch.autograd.graph.saved_tensors_hooks, torch.autograd.graph.save_on_cpu)),
    ):  # fmt: skip
        with disable("no hooks in this block"):
            for block in (hooks(lambda x: x, lambda x: x), on_cpu()):
                with pytest.raises(RuntimeError, match="no hooks in this block"):
                    with block:
                        pass
        with on_cpu():  # allowed again outside
            pass


def test_increment_version_takes_a_tensor_or_several():
    x = tc.ones(2)
    increment_version(x)
    increment_version([x, tc.zeros(1)])
    with pytest.raises(TypeError, match="increment_version"):
        increment_version(3)


def test_the_module_is_reached_as_torchs():
    import tricycle.autograd.graph as graph  # noqa: PLC0415 - the import is what is tested
    from tricycle.autograd.functional import jacobian  # noqa: PLC0415

    assert tc.autograd.graph is graph and graph.register_multi_grad_hook is register_multi_grad_hook
    assert jacobian is tc.autograd.functional.jacobian
    names = {"saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
             "register_multi_grad_hook", "increment_version"}  # fmt: skip
    assert names <= set(graph.__all__) and names <= set(torch.autograd.graph.__all__)

"""The hooks of torch.nn.Module on tricycle's Layer (``tricycle.module_hooks``) and
``Tensor.register_hook``: the same calls (order, arguments' values) and the same effects
(outputs, gradients of inputs and parameters) as torch's, on a small model built both ways."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_module_torch_api import MLP, torch_twin  # the MLP both ways, as there

import tricycle.nn as nn
from tricycle.gradcheck import gradcheck
from tricycle.tensor import Tensor, no_grad, to_tensor


def values(x):
    """A hook's argument as numpy (a Tensor of either library, None, or a tuple of them)."""
    if isinstance(x, tuple | list):
        return tuple(values(v) for v in x)
    if x is None:
        return None
    return x.numpy() if isinstance(x, Tensor) else x.detach().numpy()


def same(ours, theirs):
    """The same nested record: names equal, arrays close."""
    assert type(ours) is type(theirs) or isinstance(ours, tuple | list), (ours, theirs)
    if isinstance(ours, tuple | list):
        assert len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    elif isinstance(ours, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    else:
        assert ours == theirs


def run_both(torch, hook_both, x=None, loss=lambda y: (y * y).sum()):
    """Build the MLP both ways, let ``hook_both(layers, log)`` register hooks on ours and on
    theirs (``layers``: first, second, third of that model), run forward and backward, and
    check the logs, outputs and every gradient are the same."""
    ours = MLP().to(np.float64)
    theirs = torch_twin(torch, ours)
    logs = {"ours": [], "theirs": []}
    hook_both((ours.first, ours.second, ours.third), logs["ours"])
    hook_both(tuple(theirs[::2]), logs["theirs"])
    x = np.random.default_rng(0).normal(size=(6, 3)) if x is None else x
    x_ours, x_theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    same(values(y_ours), values(y_theirs))
    loss(y_ours).backward()
    loss(y_theirs).backward()
    same(values(x_ours.grad), values(x_theirs.grad))
    for mine, their in zip((ours.first, ours.second, ours.third), theirs[::2]):
        same(values(mine.weights.grad), values(their.weight.grad).T)
        same(values(mine.bias.grad), values(their.bias.grad))
    same(logs["ours"], logs["theirs"])
    return logs["ours"]


# ---------------------------------------------------------------------- forward hooks
def test_forward_hooks_see_and_replace_args_and_output_as_torch():
    torch = pytest.importorskip("torch")

    def hook_both(layers, log):
        first, second, third = layers
        second.register_forward_pre_hook(lambda m, args: log.append(("pre", values(args))))
        second.register_forward_pre_hook(lambda m, args: args[0] * 2)  # one value: the args
        second.register_forward_hook(lambda m, args, out: log.append(("post", values(out))))
        second.register_forward_hook(lambda m, args, out: out + 1)
        second.register_forward_hook(lambda m, args, out: log.append(("after", values(args))))
        first.register_forward_hook(lambda m, args, out: log.append(("first", values(out))))
        third.register_forward_pre_hook(
            lambda m, args: log.append(("third", values(args))), prepend=True
        )

    log = run_both(torch, hook_both)
    assert [entry[0] for entry in log] == ["first", "pre", "post", "after", "third"]


def test_forward_hooks_with_kwargs_as_torch():
    torch = pytest.importorskip("torch")

    def kwargs_hooks(layer, log):
        def pre(m, args, kwargs):
            log.append(("pre", values(args), dict(kwargs)))
            return args, {"scale": 3.0}

        layer.register_forward_pre_hook(pre, with_kwargs=True)
        layer.register_forward_hook(
            lambda m, args, kwargs, out: log.append(("post", dict(kwargs), values(out))),
            with_kwargs=True,
        )

    class Scaled(nn.Module):
        def __init__(self):
            self.linear = nn.Linear(3, 2)

        def forward(self, x, scale=1.0):
            return self.linear(x) * scale

    class TorchScaled(torch.nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.linear = torch.nn.Linear(3, 2).double()
            with torch.no_grad():
                self.linear.weight.copy_(torch.tensor(ours.linear.weights.array.T))
                self.linear.bias.copy_(torch.tensor(ours.linear.bias.array))

        def forward(self, x, scale=1.0):
            return self.linear(x) * scale

    ours = Scaled().to(np.float64)
    theirs = TorchScaled(ours)
    logs = ([], [])
    kwargs_hooks(ours, logs[0])
    kwargs_hooks(theirs, logs[1])
    x = np.random.default_rng(1).normal(size=(4, 3))
    same(values(ours(Tensor(x), scale=2.0)), values(theirs(torch.tensor(x), scale=2.0)))
    same(logs[0], logs[1])
    assert logs[0][0][2] == {"scale": 2.0} and logs[0][1][1] == {"scale": 3.0}


def test_handles_remove_hooks_and_a_layer_without_hooks_takes_the_plain_path():
    layer, log = nn.Linear(3, 2), []
    first = layer.register_forward_hook(lambda m, a, o: log.append(1))
    with layer.register_forward_pre_hook(lambda m, a: log.append(0)):
        layer(to_tensor(np.ones((1, 3))))
    assert log == [0, 1]
    first.remove()
    first.remove()  # twice is harmless, as torch's
    layer(to_tensor(np.ones((1, 3))))
    assert log == [0, 1] and "_hooks" not in vars(layer)  # Layer.__call__'s fast path again
    assert type(layer).__call__ is nn.Module.__call__


def test_every_layer_of_the_catalogue_runs_hooks_but_the_containers():
    """Hooks run in Layer.__call__: no layer may call forward another way, but the
    containers, which have no forward (as torch's ModuleList, ModuleDict, ParameterList and
    ParameterDict)."""
    import tricycle.blocks
    import tricycle.layers
    import tricycle.models
    from tricycle.activation import InPlaceActivation

    own_call = {
        name
        for module in (nn, tricycle.layers, tricycle.blocks, tricycle.models)
        for name, kind in vars(module).items()
        if isinstance(kind, type) and issubclass(kind, nn.Module)
        and kind.__call__ not in (nn.Module.__call__, InPlaceActivation.__call__)
    }  # fmt: skip
    assert own_call == {"ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
    # an in-place activation's call writes the result of Layer.__call__ (hooks and all)
    for inplace in False, True:
        relu, seen = nn.ReLU(inplace=inplace), []
        relu.register_forward_pre_hook(lambda m, args: seen.append("pre"))
        relu.register_forward_hook(lambda m, args, out: seen.append(out))
        x = to_tensor(np.array([-1.0, 2.0])) * 1.0
        out = relu(x)
        assert seen[0] == "pre" and len(seen) == 2 and (out is x) == inplace
        np.testing.assert_array_equal(seen[1].array, out.array)  # the hook saw the output


def test_an_always_call_hook_runs_when_forward_raises_as_torch():
    torch = pytest.importorskip("torch")
    for module, error in ((nn.Linear(3, 2), ValueError), (torch.nn.Linear(3, 2), RuntimeError)):
        seen = []
        module.register_forward_hook(lambda m, a, o: seen.append(o), always_call=True)
        module.register_forward_hook(lambda m, a, o: seen.append("never"))
        with pytest.raises(error):
            module(to_tensor(np.ones((1, 4))) if error is ValueError else torch.ones(1, 4))
        assert seen == [None]


def test_a_layer_called_twice_runs_its_hooks_each_time_as_torch():
    torch = pytest.importorskip("torch")

    def hook_both(layers, log):
        layers[1].register_forward_hook(lambda m, a, o: log.append(("fwd", values(o))))
        layers[1].register_full_backward_hook(
            lambda m, gi, go: log.append(("bwd", values(gi), values(go)))
        )

    ours = MLP().to(np.float64)
    theirs = torch_twin(torch, ours)
    logs = ([], [])
    hook_both((ours.first, ours.second, ours.third), logs[0])
    hook_both(tuple(theirs[::2]), logs[1])
    x = np.random.default_rng(2).normal(size=(3, 5))
    for model, log, make in ((ours.second, logs[0], Tensor), (theirs[2], logs[1], torch.tensor)):
        x_in = make(x, requires_grad=True)
        y = model(model(x_in).sum() * x_in)  # the layer used twice in one graph
        (y * y).sum().backward()
        log.append(("grad", values(x_in.grad)))
    same(logs[0], logs[1])
    assert [e[0] for e in logs[0]] == ["fwd", "fwd", "bwd", "bwd", "grad"]


# ---------------------------------------------------------------------- backward hooks
def test_full_backward_hooks_see_the_gradients_as_torch():
    torch = pytest.importorskip("torch")

    def hook_both(layers, log):
        for name, layer in zip("abc", layers):
            layer.register_full_backward_pre_hook(
                lambda m, go, n=name: log.append((n, "pre", values(go)))
            )
            layer.register_full_backward_hook(
                lambda m, gi, go, n=name: log.append((n, "full", values(gi), values(go)))
            )

    log = run_both(torch, hook_both)
    assert [e[:2] for e in log] == [("c", "pre"), ("c", "full"), ("b", "pre"), ("b", "full"),
                                    ("a", "pre"), ("a", "full")]  # fmt: skip


def test_full_backward_hooks_replace_gradients_as_torch():
    torch = pytest.importorskip("torch")

    def hook_both(layers, log):
        first, second, third = layers
        # grad_output scaled before second's backward: its parameters' gradients change
        second.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        # grad_input halved: only what is below changes
        second.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
        second.register_full_backward_hook(lambda m, gi, go: log.append(values(gi)))
        third.register_full_backward_hook(lambda m, gi, go: None)

    run_both(torch, hook_both)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch's, on the inner layer
def test_backward_hooks_with_tuple_outputs_and_inputs_without_gradient_as_torch():
    """A layer of three inputs (a Tensor that needs no gradient, one that does, a number) and
    three outputs (one gets no gradient, one is a string); inside it a layer whose input needs
    no gradient: its grad_input is (None,), as torch's."""
    torch = pytest.importorskip("torch")

    def make(lib, linear):
        class Pair(lib.Module):
            def __init__(self):
                lib.Module.__init__(self)
                self.linear = linear

            def forward(self, x, mask, k):
                h = self.linear(x) * mask
                return h, h * k, "label"

        return Pair()

    ours = make(nn, nn.Linear(3, 2).to(np.float64))
    theirs = make(torch.nn, torch.nn.Linear(3, 2).double())
    with torch.no_grad():
        theirs.linear.weight.copy_(torch.tensor(ours.linear.weights.array.T))
        theirs.linear.bias.copy_(torch.tensor(ours.linear.bias.array))
    logs = ([], [])
    for model, log in zip((ours, theirs), logs):
        model.register_full_backward_pre_hook(lambda m, go, log=log: log.append(values(go)))
        model.register_full_backward_hook(
            lambda m, gi, go, log=log: log.append((values(gi), values(go)))
        )
        model.linear.register_full_backward_hook(
            lambda m, gi, go, log=log: log.append(("linear", values(gi)))
        )
    rng = np.random.default_rng(3)
    x, mask = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    for model, log, make_tensor in ((ours, logs[0], Tensor), (theirs, logs[1], torch.tensor)):
        x_in = make_tensor(x, requires_grad=False)  # so linear's input needs no gradient
        mask_in = make_tensor(mask, requires_grad=True)
        h, _, label = model(x_in, mask_in, 2.0)
        assert label == "label"
        (h * h).sum().backward()  # the second output gets no gradient
        log.append(values(mask_in.grad))
    same(logs[0], logs[1])
    assert logs[0][0][1] is None and logs[0][1] == ("linear", (None,))
    grad_input = logs[0][2][0]  # zeros for x (no gradient), None for k (no Tensor)
    assert not grad_input[0].any() and grad_input[2] is None


def test_backward_hooks_run_on_each_backward_of_a_retained_graph():
    layer, log = nn.Linear(2, 2), []
    layer.register_full_backward_hook(lambda m, gi, go: log.append(values(go)[0].sum()))
    y = layer(to_tensor(np.ones((1, 2)), requires_grad=True))
    y.sum().backward(retain_graph=True)
    (y * 2).sum().backward()
    assert log == [2.0, 4.0]
    with no_grad():  # no graph, no bundles, no hooks
        assert layer(to_tensor(np.ones((1, 2)))).args is None


@given(st.integers(1, 4), st.integers(1, 4))
def test_hooks_that_return_nothing_leave_the_gradients_alone(n, d):
    layer = nn.Linear(d, d)
    layer.register_full_backward_pre_hook(lambda m, go: None)
    layer.register_full_backward_hook(lambda m, gi, go: None)
    layer.register_forward_hook(lambda m, a, o: None)
    rng = np.random.default_rng(n * 10 + d)
    x, w, b = rng.normal(size=(n, d)), rng.normal(size=(d, d)), rng.normal(size=d)

    def twice(x, w, b):  # the layer twice in one graph: two calls, two pairs of bundles
        layer.weights, layer.bias = w, b
        return layer(layer(x))

    assert gradcheck(twice, x, w, b)


def test_bad_hooks_and_bad_gradients_are_named():
    layer = MLP()
    with pytest.raises(TypeError, match=r"^MLP.register_forward_hook: hook must be callable"):
        layer.register_forward_hook(3)
    with pytest.raises(TypeError, match=r"^MLP.register_forward_pre_hook: prepend must be"):
        layer.register_forward_pre_hook(print, prepend=1)
    with layer.register_forward_pre_hook(lambda m, a, k: 1, with_kwargs=True):
        with pytest.raises(RuntimeError, match=r"^MLP: a forward pre-hook with kwargs must"):
            layer(to_tensor(np.ones((1, 3))))
    x = to_tensor(np.ones((1, 3)), requires_grad=True)
    with layer.register_full_backward_hook(lambda m, gi, go: (gi[0][0],)):
        with pytest.raises(RuntimeError, match=r"shape \(3,\) for grad_input\[0\]; expected"):
            layer(x).sum().backward()
    with layer.register_full_backward_pre_hook(lambda m, go: (go[0], go[0])):
        with pytest.raises(RuntimeError, match=r"expected None or a tuple of 1"):
            layer(x).sum().backward()
    with pytest.raises(AttributeError, match="register_full_backward_hook"):
        layer.register_backward_hook(print)  # torch's deprecated one


# ---------------------------------------------------------------------- Tensor.register_hook
def test_tensor_hooks_see_and_replace_gradients_as_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).normal(size=(3, 4))
    logs = []
    for make in (Tensor, torch.tensor):
        log = []
        a = make(x, requires_grad=True)
        a.register_hook(lambda g, log=log: log.append(("a", values(g))))
        a.register_hook(lambda g: g * 2)  # the leaf's .grad is what the hooks leave
        b = a * a  # a diamond: b's gradient is summed over both paths before its hooks
        b.register_hook(lambda g, log=log: log.append(("b", values(g))))
        b.register_hook(lambda g: g + 1)
        b.register_hook(lambda g, log=log: log.append(("b+1", values(g))))
        removed = b.register_hook(lambda g: g * 0)
        removed.remove()
        y = (b * 3 + b.exp()).sum()
        y.register_hook(lambda g, log=log: log.append(("y", values(g))))
        y.backward()
        log.append(("grad", values(a.grad)))
        logs.append(log)
    same(logs[0], logs[1])
    assert [e[0] for e in logs[0]] == ["y", "b", "b+1", "a", "grad"]


def test_tensor_hook_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        to_tensor(np.ones(2), requires_grad=False).register_hook(print)
    with pytest.raises(TypeError, match=r"^Tensor.register_hook: hook must be callable"):
        to_tensor(np.ones(2), requires_grad=True).register_hook(None)
    a = to_tensor(np.ones(2), requires_grad=True)
    a.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match=r"returned Tensor of shape \(\); expected .* \(2,\)"):
        (a * 2).sum().backward()


@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_a_gpt_run_under_a_policy_calls_its_hooks_once(mode):
    """``GPT(x, precision=p)`` runs the policy inside the forward its hooks wrap: one pre and
    one post call, the post hook seeing the logits the call returns."""
    from tricycle.configs import DebugConfig
    from tricycle.models import GPT
    from tricycle.precision import Precision

    if mode == "bf16":
        pytest.importorskip("ml_dtypes")
    model = GPT(DebugConfig())
    seen = []
    model.register_forward_pre_hook(lambda layer, args: seen.append(("pre", len(args))))
    model.register_forward_hook(lambda layer, args, out: seen.append(("post", out)))
    ids = np.zeros((2, 4), dtype=np.int64)
    logits = model(ids, precision=Precision(mode))
    assert [kind for kind, _ in seen] == ["pre", "post"]
    assert seen[1][1] is logits
    full = model(ids).numpy().astype(np.float64)  # (2, 4, V)
    np.testing.assert_allclose(logits.numpy().astype(np.float64), full, rtol=0.1, atol=0.05)

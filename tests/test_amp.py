"""torch's mixed-precision loop on tricycle (``tricycle.amp``): ``autocast`` gives the numbers of
the bf16/fp16 precision policies, puts every parameter back and leaves the plain call path
once done; ``GradScaler`` follows torch's scale, skips and updates step for step; the global
module hooks run as torch's (order, arguments, removal)."""

import threading

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
from tricycle.casting import cast
from tricycle.module import Layer
from tricycle.optim import SGD
from tricycle.precision import Precision
from tricycle.tensor import Tensor


class MLP(nn.Module):
    def __init__(self):
        self.first, self.second = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.second(nn.ReLU()(self.first(x)))


class FirstInFloat32(MLP):
    """Its first layer runs with autocast off, as a torch model keeps a part in float32."""

    def forward(self, x):
        with tc.autocast("cpu", enabled=False):
            hidden = self.first(x)
        return self.second(nn.ReLU()(hidden))


def model_and_input(kind=MLP):
    tc.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    return kind(), Tensor(x)


def run(model, forward, x):
    """forward's output and the float32 gradients of (output ** 2).sum(), as numpy."""
    model.zero_grad()
    y = forward(x)
    (y * y).sum().backward()
    return [y.numpy(), *(p.grad.numpy() for p in model.parameters())]


def assert_same(ours, reference):
    for a, b in zip(ours, reference, strict=True):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------- autocast
@pytest.mark.parametrize("dtype, mode", [("bfloat16", "bf16"), ("float16", "fp16")])
def test_autocast_gives_the_precision_policys_numbers_and_leaves_the_plain_path(dtype, mode):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    model, x = model_and_input()
    masters = model.parameters()

    def under_autocast(x):
        with tc.autocast("cpu", dtype=getattr(tc, dtype)):
            assert Layer._hooks is not None  # every layer call goes through module_hooks.call
            return model(x)

    ours = run(model, under_autocast, x)
    assert Layer._hooks is None and "_hooks" not in vars(model)  # the fast path again
    assert all(p is q and p.dtype == np.float32 for p, q in zip(model.parameters(), masters))
    assert_same(ours, run(model, lambda x: Precision(mode).forward(model, x), x))
    assert not np.array_equal(ours[0], run(model, model, x)[0])  # it did compute in 16 bits


def test_blocks_nest_and_enabled_false_restores_float32():
    pytest.importorskip("ml_dtypes")
    model, x = model_and_input()

    def disabled_inside(x):
        with tc.autocast("cpu"), tc.autocast("cpu", enabled=False):
            return model(x)

    def float16_inside(x):
        with tc.autocast("cpu"), tc.autocast("cpu", dtype=tc.float16):
            return model(x)

    decorated = tc.amp.autocast("cpu", dtype=tc.float16)(model)
    float16 = run(model, lambda x: Precision("fp16").forward(model, x), x)
    assert_same(run(model, disabled_inside, x), run(model, model, x))
    assert_same(run(model, float16_inside, x), float16)
    assert_same(run(model, decorated, x), float16)
    assert Layer._hooks is None


def test_a_layer_under_enabled_false_inside_a_forward_uses_the_float32_master_weights():
    bf16 = pytest.importorskip("ml_dtypes").bfloat16
    model, x = model_and_input(FirstInFloat32)

    def reference(x):
        # the model's input cast to bfloat16; first from its float32 weights (numpy widens the
        # input), its output cast to its caller's bfloat16; second as the bf16 policy runs it
        hidden = cast(model.first(cast(x, bf16)), bf16)
        return Precision("bf16").forward(model.second, nn.ReLU()(hidden))

    def ours(x):
        with tc.autocast("cpu", dtype=tc.bfloat16):
            return model(x)

    result = run(model, ours, x)
    assert_same(result, run(model, reference, x))
    all_bf16 = run(model, lambda x: Precision("bf16").forward(model, x), x)  # first's casts kept
    assert not np.array_equal(result[1], all_bf16[1])


def test_parameters_are_put_back_when_the_forward_raises():
    model, x = model_and_input()
    masters = model.parameters()
    with pytest.raises(ValueError), tc.autocast("cpu", dtype=tc.float16):
        model(Tensor(np.ones((2, 5), np.float32)))  # 5 features where 4 are expected
    assert all(p is q and p.dtype == np.float32 for p, q in zip(model.parameters(), masters))
    assert model.first.weights is masters[0] and Layer._hooks is None


def test_a_block_is_its_threads_own():
    model, x = model_and_input()
    opened, done = threading.Event(), threading.Event()

    def other_thread():
        with tc.autocast("cpu", dtype=tc.float16):
            opened.set()
            done.wait(10)

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        assert opened.wait(10) and Layer._hooks is not None
        calls_here = run(model, model, x)  # this thread has no block: float32
    finally:
        done.set()
        thread.join()
    assert_same(calls_here, run(model, model, x))
    assert Layer._hooks is None


def test_bad_arguments_and_torchs_warnings():
    with pytest.raises(ValueError, match="device_type"):
        tc.autocast("tpu")
    with pytest.raises(TypeError, match="floating dtype"):
        tc.autocast("cpu", dtype=np.int32)
    with pytest.raises(TypeError, match="enabled"):
        tc.autocast("cpu", enabled=1)
    with pytest.warns(UserWarning, match="bfloat16 or float16"):
        assert not tc.autocast("cpu", dtype=np.float32).enabled
    if not tc.cuda.is_available():
        with pytest.warns(UserWarning, match="no CUDA GPU"):
            assert not tc.autocast("cuda").enabled
        with pytest.warns(UserWarning, match="no CUDA GPU"):
            assert not tc.amp.GradScaler("cuda").is_enabled()
    assert tc.autocast("cpu", dtype="float16").fast_dtype == np.float16


# ---------------------------------------------------------------------- GradScaler
def test_grad_scaler_follows_torchs_scales_skips_and_parameters():
    torch = pytest.importorskip("torch")
    model, x = model_and_input()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for mine, their in zip((model.first, model.second), theirs[::2]):
            their.weight.copy_(torch.tensor(mine.weights.numpy().T))
            their.bias.copy_(torch.tensor(mine.bias.numpy()))
    ours_opt, their_opt = SGD(model.parameters(), lr=0.1, momentum=0.9), None
    their_opt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    options = {"init_scale": 2.0**10, "growth_interval": 2}
    ours_scaler = tc.amp.GradScaler("cpu", **options)
    their_scaler = torch.amp.GradScaler("cpu", **options)
    for step in range(6):
        for opt, scaler, net, inputs, clip in (
            (ours_opt, ours_scaler, model, x, nn.utils.clip_grad_norm_),
            (their_opt, their_scaler, theirs, torch.tensor(x.numpy()),
             torch.nn.utils.clip_grad_norm_),
        ):  # fmt: skip
            opt.zero_grad()
            y = net(inputs)
            scaler.scale((y * y).mean()).backward()
            if step == 2:  # an overflow: the step is skipped and the scale backs off
                first = next(iter(opt.param_groups[0]["params"]))
                grad = first.grad.numpy().copy()
                grad.flat[0] = np.inf
                first.grad = Tensor(grad) if net is model else torch.tensor(grad)
            scaler.unscale_(opt)
            if step != 2:
                clip(net.parameters(), 0.5)
            scaler.step(opt)
            scaler.update()
        assert ours_scaler.get_scale() == their_scaler.get_scale(), step
        for mine, their in zip((model.first, model.second), theirs[::2]):
            np.testing.assert_allclose(mine.weights.numpy(), their.weight.detach().numpy().T,
                                       rtol=1e-5, atol=1e-6)  # fmt: skip
    assert ours_scaler.state_dict() == their_scaler.state_dict()
    ours_scaler.load_state_dict(their_scaler.state_dict())  # torch's state loads as it is
    assert ours_scaler.scaler.skipped_steps == 1


def test_grad_scaler_protocol_errors_and_pass_through():
    model, x = model_and_input()
    opt, scaler = SGD(model.parameters(), lr=0.1), tc.amp.GradScaler("cpu", init_scale=8.0)
    with pytest.raises(RuntimeError, match="no parameter"):
        scaler.step(opt)
    scaler.scale(model(x).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step"):
        scaler.step(opt)
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    with pytest.raises(RuntimeError, match="no inf/NaN checks"):
        scaler.update()
    with pytest.raises(TypeError, match="param_groups"):
        scaler.step(object())
    off = tc.amp.GradScaler("cpu", enabled=False)
    loss = model(x).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


# ---------------------------------------------------------------------- global module hooks
def test_global_module_hooks_run_as_torchs():
    torch = pytest.importorskip("torch")
    from torch.nn.modules import module as torch_module

    from tricycle.nn.modules import module as our_module

    model, x = model_and_input()
    model = nn.Sequential(model.first, nn.ReLU(), model.second)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for mine, their in zip(model.sequence[::2], theirs[::2]):
            their.weight.copy_(torch.tensor(mine.weights.numpy().T))
            their.bias.copy_(torch.tensor(mine.bias.numpy()))

    def numbers(value):
        if isinstance(value, tuple):
            return tuple(numbers(v) for v in value)
        if value is None:
            return None
        return value.numpy() if isinstance(value, Tensor) else value.detach().numpy()

    logs = []
    for library, net, inputs in (
        (our_module, model, x),
        (torch_module, theirs, torch.tensor(x.numpy())),
    ):
        log, names = [], {id(net): "all", **{id(m): str(i) for i, m in enumerate(net)}}
        handles = [
            library.register_module_forward_pre_hook(
                lambda m, a, log=log, n=names: log.append(("pre", n[id(m)], numbers(a)))),
            library.register_module_forward_hook(
                lambda m, a, o, log=log, n=names: log.append(("fwd", n[id(m)], numbers(o)))),
            library.register_module_full_backward_pre_hook(
                lambda m, go, log=log, n=names: log.append(("bpre", n[id(m)], numbers(go)))),
            library.register_module_full_backward_hook(
                lambda m, gi, go, log=log, n=names: log.append(("bwd", n[id(m)], numbers(gi)))),
        ]  # fmt: skip
        net[0].register_forward_hook(lambda m, a, o, log=log: log.append(("own", "0", None)))
        inputs.requires_grad = True
        (net(inputs) ** 2).sum().backward()
        for handle in handles:
            handle.remove()
        net(inputs)  # no global hook runs now
        logs.append(log)
    ours, theirs_log = logs
    order = [entry[:2] for entry in ours]
    assert order == [entry[:2] for entry in theirs_log]
    assert order[:4] == [("pre", "all"), ("pre", "0"), ("fwd", "0"), ("own", "0")]
    assert order[-2:] == [("bwd", "all"), ("own", "0")]  # after removal: the layer's own alone

    def close(a, b):
        if isinstance(a, tuple):
            assert isinstance(b, tuple) and len(a) == len(b)
            return all(close(x, y) for x, y in zip(a, b))
        assert (a is None) == (b is None)
        return a is None or np.allclose(a, b, rtol=1e-5, atol=1e-6)

    assert all(close(mine[2], their[2]) for mine, their in zip(ours, theirs_log))
    assert Layer._hooks is None
    assert nn.register_module_forward_hook is our_module.register_module_forward_hook

"""torch.cuda's CUDA graphs (``tricycle.cuda.CUDAGraph``, ``graph``, ``graph_pool_handle``,
``is_current_stream_capturing``, ``make_graphed_callables``: ``tricycle.apps.cuda_graphs``).

On the CPU: every name refuses as torch's does on a machine without CUDA (a RuntimeError),
and ``make_graphed_callables`` first refuses what torch's refuses before it looks for a GPU
(hooks, sample arguments that are not Tensors: AssertionErrors). On a GPU:
torch's documented examples, run as written: the whole-network capture (forward, loss,
backward and the optimiser's step in one graph; replays equal eager steps on the same data,
with SGD and with Adam, whose counts each replay advances), ``make_graphed_callables`` on a
module (outputs and gradients equal eager), the partial-network capture (two graphed
modules and an eager one, trained), dropout's fresh masks, a shared pool, and the refusals.
"""

import numpy as np
import pytest

import tricycle as tc
from tricycle import backend
from tricycle.backends.cuda.capture import CaptureError
from tricycle.cuda import graphs

gpu = pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
no_gpu = pytest.mark.skipif(backend.cupy_available(), reason="the answers without a GPU")


def _host(t) -> np.ndarray:
    array = t.array if hasattr(t, "array") else t
    return array.get() if backend.is_cupy_array(array) else np.asarray(array)


# ====================================================================== without a GPU
def test_the_names_are_tricycle_cudas():
    for name in graphs.NAMES:
        assert getattr(tc.cuda, name) is getattr(graphs, name)


@no_gpu
def test_without_a_gpu_every_name_refuses_as_torchs():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU that tricycle does not")
    layer = tc.nn.Linear(2, 2)
    calls = {
        "CUDAGraph": (lambda m: m.cuda.CUDAGraph(), lambda: graphs.CUDAGraph()),
        "graph_pool_handle": (lambda m: m.cuda.graph_pool_handle(), graphs.graph_pool_handle),
        "is_current_stream_capturing": (
            lambda m: m.cuda.is_current_stream_capturing(),
            graphs.is_current_stream_capturing,
        ),
        "graph": (lambda m: m.cuda.graph(None), lambda: graphs.graph(None)),
        "make_graphed_callables": (
            lambda m: m.cuda.make_graphed_callables(m.nn.Linear(2, 2), (m.randn(3, 2),)),
            lambda: graphs.make_graphed_callables(layer, (tc.randn(3, 2),)),
        ),
    }
    for name, (theirs, ours) in calls.items():
        with pytest.raises(RuntimeError):
            theirs(torch)
        with pytest.raises(RuntimeError, match=rf"tricycle.cuda.{name}: CUDA graphs need a"):
            ours()


def test_make_graphed_callables_refuses_what_torchs_refuses_before_any_gpu():
    torch = pytest.importorskip("torch")

    def cases(m):
        hooked = m.nn.Linear(2, 2)
        hooked.register_forward_hook(lambda layer, args, out: None)
        return [
            ((hooked, (m.randn(3, 2),)), "hooks registered"),
            ((m.nn.Linear(2, 2), (m.randn(3, 2), 2.0)), "must contain only Tensors"),
        ]

    for (args, message), (theirs, _) in zip(cases(tc), cases(torch)):
        with pytest.raises(AssertionError, match=message):
            torch.cuda.make_graphed_callables(*theirs)
        with pytest.raises(AssertionError, match=message):
            graphs.make_graphed_callables(*args)


# ====================================================================== on a GPU
N, D_IN, H, D_OUT = 16, 12, 10, 6


def _model(seed: int = 0, dropout: float = 0.0):
    tc.manual_seed(seed)
    layers = [tc.nn.Linear(D_IN, H), tc.nn.ReLU(), tc.nn.Linear(H, D_OUT)]
    if dropout:
        layers.insert(2, tc.nn.Dropout(dropout))
    return tc.nn.Sequential(*layers).to("cuda")


def _data(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return [
        (tc.tensor(rng.standard_normal((N, D_IN)), dtype=tc.float32, device="cuda"),
         tc.tensor(rng.standard_normal((N, D_OUT)), dtype=tc.float32, device="cuda"))
        for _ in range(n)
    ]  # fmt: skip


def _eager_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad(set_to_none=True)
    y_pred = model(x)
    loss = loss_fn(y_pred, y)
    loss.backward()
    optimizer.step()
    return y_pred, loss


@gpu
@pytest.mark.parametrize("make", [
    lambda p: tc.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: tc.optim.Adam(p, lr=0.01),
])  # fmt: skip
def test_whole_network_capture_replays_equal_eager_steps(make):
    loss_fn = tc.nn.MSELoss()
    model, twin = _model(), _model()
    optimizer, twin_optimizer = make(model.parameters()), make(twin.parameters())
    warmup, batches = _data(3, seed=1), _data(4, seed=2)
    static_input, static_target = (
        tc.zeros(N, D_IN, device="cuda"),
        tc.zeros(N, D_OUT, device="cuda"),
    )
    static_input.copy_(warmup[0][0])
    static_target.copy_(warmup[0][1])
    for _ in range(3):  # torch's warm-up, on the static tensors
        _eager_step(model, optimizer, loss_fn, static_input, static_target)
        _eager_step(twin, twin_optimizer, loss_fn, warmup[0][0], warmup[0][1])
    g = tc.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with tc.cuda.graph(g):
        assert tc.cuda.is_current_stream_capturing()
        static_y_pred = model(static_input)
        static_loss = loss_fn(static_y_pred, static_target)
        static_loss.backward()
        optimizer.step()
    assert not tc.cuda.is_current_stream_capturing()
    losses = []
    for data, target in batches:
        static_input.copy_(data)
        static_target.copy_(target)
        g.replay()
        y_pred, loss = _eager_step(twin, twin_optimizer, loss_fn, data, target)
        losses.append(float(loss.item()))
        # the block's tensors are the graph's, rewritten in place by each replay
        np.testing.assert_allclose(_host(static_y_pred), _host(y_pred), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_host(static_loss), _host(loss), rtol=1e-5, atol=1e-6)
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(_host(p.grad), _host(q.grad), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(_host(p), _host(q), rtol=1e-5, atol=1e-6)
    assert len(set(losses)) == len(losses)  # each replay computed its own batch


@gpu
def test_replays_draw_fresh_dropout_masks():
    model = _model(dropout=0.5)
    x = tc.randn(N, D_IN, device="cuda")
    model(x)  # warm-up
    g = tc.cuda.CUDAGraph()
    with tc.cuda.graph(g):
        y = model(x)
    g.replay()
    first = _host(y).copy()
    g.replay()
    assert not np.array_equal(first, _host(y))  # a mask of its own at each replay


@gpu
def test_make_graphed_callables_on_a_module_equals_eager():
    model, twin = _model(), _model()
    sample = tc.randn(N, D_IN, device="cuda", requires_grad=True)
    graphed = tc.cuda.make_graphed_callables(model, (sample,))
    assert graphed is model
    for x, target in _data(3, seed=3):
        x_graph = x.detach().requires_grad_()
        x_eager = x.detach().requires_grad_()
        for m in (model, twin):
            m.zero_grad()
        out = model(x_graph)
        expected = twin(x_eager)
        np.testing.assert_allclose(_host(out), _host(expected), rtol=1e-5, atol=1e-6)
        ((out - target) ** 2).sum().backward()
        ((expected - target) ** 2).sum().backward()
        np.testing.assert_allclose(_host(x_graph.grad), _host(x_eager.grad), rtol=1e-5, atol=1e-6)
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(_host(p.grad), _host(q.grad), rtol=1e-5, atol=1e-6)
    model.eval()  # another mode than captured: the eager forward
    twin.eval()
    x = tc.randn(2, D_IN, device="cuda")  # another shape: fine eagerly
    np.testing.assert_allclose(_host(model(x)), _host(twin(x)), rtol=1e-5, atol=1e-6)


@gpu
def test_partial_network_capture_trains_as_eager():
    def modules(seed):
        tc.manual_seed(seed)
        return [tc.nn.Linear(D_IN, H).to("cuda"), tc.nn.Linear(H, D_OUT).to("cuda"),
                tc.nn.Linear(H, D_OUT).to("cuda")]  # fmt: skip

    ours, theirs = modules(0), modules(0)
    loss_fn = tc.nn.MSELoss()
    optimizer = tc.optim.SGD([p for m in ours for p in m.parameters()], lr=0.1)
    twin_optimizer = tc.optim.SGD([p for m in theirs for p in m.parameters()], lr=0.1)
    x = tc.randn(N, D_IN, device="cuda")
    h = tc.randn(N, H, device="cuda", requires_grad=True)
    module1, module2 = tc.cuda.make_graphed_callables((ours[0], ours[1]), ((x,), (h,)))
    for i, (data, target) in enumerate(_data(4, seed=4)):
        losses = []
        for (m1, m2, m3), opt in (
            ((module1, module2, ours[2]), optimizer),
            (theirs, twin_optimizer),
        ):
            opt.zero_grad(set_to_none=True)
            tmp = m1(data)
            y_pred = m2(tmp) if i % 2 == 0 else m3(tmp)  # torch's example: a branch on data
            loss = loss_fn(y_pred, target)
            loss.backward()
            opt.step()
            losses.append(_host(loss))
        np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5, atol=1e-6)
    for m, n in zip(ours, theirs):
        for p, q in zip(m.parameters(), n.parameters()):
            np.testing.assert_allclose(_host(p), _host(q), rtol=1e-5, atol=1e-6)


@gpu
def test_graphs_share_a_pool_and_a_function_is_graphed():
    pool = tc.cuda.graph_pool_handle()
    x = tc.randn(N, D_IN, device="cuda")
    first, second = tc.cuda.CUDAGraph(), tc.cuda.CUDAGraph()
    with tc.cuda.graph(first, pool=pool):
        y = x * 2.0
    with tc.cuda.graph(second, pool=first.pool()):
        z = y + 1.0
    assert first.pool() is pool and second.pool() is pool
    x.copy_(tc.ones(N, D_IN, device="cuda"))
    first.replay()
    second.replay()
    np.testing.assert_array_equal(_host(z), np.full((N, D_IN), 3.0, np.float32))

    def scaled(a, b):
        return a * b, (a + b).sum()

    a = tc.randn(4, device="cuda", requires_grad=True)
    b = tc.randn(4, device="cuda", requires_grad=True)
    graphed = tc.cuda.make_graphed_callables(scaled, (a, b))
    u, v = tc.randn(4, device="cuda"), tc.randn(4, device="cuda")
    u.requires_grad_()
    v.requires_grad_()
    prod, total = graphed(u, v)
    np.testing.assert_allclose(_host(prod), _host(u) * _host(v), rtol=1e-6)
    np.testing.assert_allclose(_host(total), (_host(u) + _host(v)).sum(), rtol=1e-5)
    (prod.sum() + 2 * total).backward()
    np.testing.assert_allclose(_host(u.grad), _host(v) + 2, rtol=1e-6)
    np.testing.assert_allclose(_host(v.grad), _host(u) + 2, rtol=1e-6)


@gpu
def test_the_refusals():
    g = tc.cuda.CUDAGraph()
    for call in (g.replay, g.pool, g.instantiate):
        with pytest.raises(RuntimeError, match="not captured|without a preceding"):
            call()
    with pytest.raises(RuntimeError, match="debug_dump"):
        g.debug_dump("graph.dot")
    with pytest.raises(RuntimeError, match="capture_error_mode"):
        tc.cuda.graph(g, capture_error_mode="strict")
    x = tc.randn(4, device="cuda")
    with pytest.raises(Exception), tc.cuda.graph(g):  # noqa: B017 - cupy's own error
        (x * 2).sum().item()  # the host waits for the device: no replay could
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()  # nothing was kept
    model = _model()
    optimizer = tc.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.1)  # L2: not fused
    for _ in range(2):
        _eager_step(model, optimizer, tc.nn.MSELoss(), *_data(1)[0])
    batch = _data(1)[0]  # made before the capture: a copy from the host cannot be captured
    with pytest.raises(CaptureError, match="adamw_step"):
        with tc.cuda.graph(tc.cuda.CUDAGraph()):
            _eager_step(model, optimizer, tc.nn.MSELoss(), *batch)
    with tc.cuda.graph(g):
        y = x + 1
    with pytest.raises(RuntimeError, match="already|being or has been"):
        g.capture_begin()
    g.replay()
    np.testing.assert_allclose(_host(y), _host(x) + 1)
    g.reset()
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()

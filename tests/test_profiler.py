"""torch.profiler on tricycle (``tricycle.profiler``): the ops and backward steps of a small
model appear with their names and call counts, self times within totals, nesting under
``record_function`` ranges and ``ProfilerStep#N``, a schedule's active steps only (its
actions and ``on_trace_ready`` steps as torch's, asked of torch where it is installed), valid
Chrome trace JSON, TensorBoard trace files, the table, and the untimed op path and walk back
in place after every profile. Times are never compared with thresholds."""

import gzip
import json
import os

import numpy as np
import pytest

import tricycle as tc
from tricycle import backprop, profiler
from tricycle.graph import Node
from tricycle.profiler import ProfilerAction, autograd_profiler, record_function, recorder

UNTIMED_INIT, UNTIMED_WALK = Node.__init__, backprop._walk


def leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return tc.tensor(rng.normal(size=shape).astype(np.float32), requires_grad=True)


def untimed() -> bool:
    return Node.__init__ is UNTIMED_INIT and backprop._walk is UNTIMED_WALK


def counts(events) -> dict:
    return {e.key: e.count for e in events.key_averages()}


def test_ops_and_backward_steps_with_names_counts_and_shapes():
    x, w = leaf(3, 4), leaf(4, 5, seed=1)
    with profiler.profile(record_shapes=True, profile_memory=True) as prof:
        h = (x @ w).exp()
        loss = (h * h).sum()
        loss.backward()
    names = [h.args[0].name if h.args else None, h.name, loss.name]
    mm, exp, total = "matmul" if names[0] is None else names[0], names[1], names[2]
    found = counts(prof.events())
    assert found[exp] == 1 and found[total] == 1 and found[mm] == 1
    assert found[f"{exp}_backward"] == 1 and found[f"{total}_backward"] == 1
    assert found[f"{mm}_backward"] == 2  # one step per input that needs a gradient
    assert found["autograd::backward"] == 1
    by_name = {e.name: e for e in prof.events()}
    assert by_name[mm].input_shapes == [[3, 4], [4, 5]]
    assert by_name[exp].self_cpu_memory_usage == 3 * 5 * 4  # its float32 output
    assert by_name[f"{exp}_backward"].cpu_parent is by_name["autograd::backward"]
    assert untimed()
    np.testing.assert_allclose(  # the gradients are the untimed walk's
        x.grad.numpy(), (2 * np.exp(2 * x.numpy() @ w.numpy())) @ w.numpy().T, rtol=1e-5
    )


def test_a_models_ops_nest_under_record_function_and_self_within_total():
    model = tc.nn.Sequential(tc.nn.Linear(4, 8), tc.nn.ReLU(), tc.nn.Linear(8, 2))
    x = tc.tensor(np.ones((3, 4), np.float32))
    with profiler.profile() as prof:
        with record_function("forward"):
            out = model(x)
            loss = out.sum()
        loss.backward()
    events = prof.events()
    forward = next(e for e in events if e.name == "forward")
    assert len(forward.cpu_children) >= 6  # two linears (two ops each), relu and the sum
    assert all(child.cpu_parent is forward for child in forward.cpu_children)
    assert all(e.cpu_parent is None for e in events if e.name == "autograd::backward")
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        assert sum(c.cpu_time_total for c in e.cpu_children) <= e.cpu_time_total
        for c in e.cpu_children:  # children lie inside their parent
            assert e.start_us <= c.start_us
            assert c.start_us + c.cpu_time_total <= e.start_us + e.cpu_time_total + 1e-3
    assert events.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    averaged = prof.key_averages()
    assert {a.key for a in averaged} == {e.key for e in events}
    assert sum(a.count for a in averaged) == len(events)
    assert averaged.total_average().count == len(events)


def test_record_function_as_decorator_and_outside_a_profile():
    @record_function("block")
    def block(t):
        return t.exp()

    x = leaf(2)
    block(x)  # no profile: nothing recorded, nothing raised
    with profiler.profile() as prof:
        block(x)
        block(x)
    blocks = [e for e in prof.events() if e.name == "block"]
    assert len(blocks) == 2 and all(len(b.cpu_children) == 1 for b in blocks)
    with pytest.raises(TypeError, match="record_function"):
        record_function(3)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(wait=1, warmup=1, active=2),
        dict(wait=1, warmup=1, active=2, repeat=2),
        dict(wait=2, warmup=1, active=1, repeat=1, skip_first=3),
        dict(wait=3, warmup=2, active=2, skip_first=2, skip_first_wait=1),
    ],
)
def test_schedule_actions_are_torchs(kwargs):
    torch_profiler = pytest.importorskip("torch.profiler")
    ours, theirs = profiler.schedule(**kwargs), torch_profiler.schedule(**kwargs)
    assert [ours(s).name for s in range(25)] == [theirs(s).name for s in range(25)]
    with pytest.raises(AssertionError, match="active"):
        profiler.schedule(wait=0, warmup=1, active=0)


def test_a_schedule_records_its_active_steps_only():
    ready = []

    def on_ready(prof):
        steps = sorted(e.name for e in prof.events() if e.name.startswith("ProfilerStep"))
        ready.append((prof.step_num, steps, counts(prof.events()).get(name, 0)))

    x = leaf(2)
    name = x.exp().name
    plan = profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with profiler.profile(schedule=plan, on_trace_ready=on_ready) as prof:
        for _ in range(10):
            x.exp()
            prof.step()
    # torch's steps for this schedule: saved at the ends of steps 3 and 7
    assert ready == [
        (4, ["ProfilerStep#2", "ProfilerStep#3"], 2),
        (8, ["ProfilerStep#6", "ProfilerStep#7"], 2),
    ]
    assert prof.step_num == 10 and untimed()


def test_without_a_schedule_on_trace_ready_runs_at_the_end_and_writes_tensorboard_files(tmp_path):
    x = leaf(2)
    handler = profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with profiler.profile(on_trace_ready=handler, activities=[profiler.ProfilerActivity.CPU]):
        x.exp()
    (written,) = os.listdir(tmp_path / "tb")
    assert written.startswith("w0.") and written.endswith(".pt.trace.json")
    trace = json.loads((tmp_path / "tb" / written).read_text())
    assert any(e["name"] == x.exp().name for e in trace["traceEvents"])
    gz = profiler.tensorboard_trace_handler(str(tmp_path / "gz"), use_gzip=True)
    with profiler.profile(on_trace_ready=gz):
        x.exp()
    (written,) = os.listdir(tmp_path / "gz")
    assert written.endswith(".pt.trace.json.gz")
    with gzip.open(tmp_path / "gz" / written, "rt") as file:
        assert json.load(file)["traceEvents"]


def test_chrome_trace_is_valid_json_of_complete_events(tmp_path):
    x = leaf(3)
    with profiler.profile() as prof:
        with record_function("outer"):
            (x.exp() * 2).sum().backward()
    prof.add_metadata("run", "test")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    document = json.loads(path.read_text())
    assert document["run"] == "test"
    events = document["traceEvents"]
    assert len(events) == len(prof.events())
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    outer = next(e for e in events if e["name"] == "outer")
    assert outer["cat"] == "user_annotation"
    inside = [e for e in events if e["name"] != "outer"]
    assert all(outer["ts"] <= e["ts"] <= outer["ts"] + outer["dur"] for e in inside)


def test_table_prints_torchs_columns_sorted_and_limited():
    x = leaf(4)
    with profiler.profile(record_shapes=True) as prof:
        for _ in range(3):
            x.exp()
        x.sum()
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="count", row_limit=1)
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "# of Calls"):
        assert column in table
    assert "Input Shapes" in table and "Self CPU time total:" in table
    rows = [line for line in table.splitlines() if line.rstrip().endswith("[[4]]")]
    assert len(rows) == 1 and x.exp().name in rows[0] and " 3  " in rows[0]
    assert x.sum().name in prof.key_averages().table(sort_by="cpu_time_total")
    assert "CPU Mem" not in table
    with pytest.raises(AttributeError, match="sort_by"):
        prof.key_averages().table(sort_by="no_such_column")
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [a.input_shapes for a in grouped if a.key == x.exp().name] == [[[4]]]


def test_the_untimed_path_comes_back_after_errors_and_one_profile_at_a_time():
    assert untimed()
    with pytest.raises(ValueError, match="boom"):
        with profiler.profile():
            assert not untimed()
            raise ValueError("boom")
    assert untimed() and recorder.active() is None
    with profiler.profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profiler.profile():
                pass
    assert untimed()
    with pytest.raises(RuntimeError, match="no trace"):
        profiler.profile().events()


def test_a_retained_graph_keeps_its_own_back_fns():
    x = leaf(3)
    y = (x * x).sum()
    back_fns = y.args[0].back_fns
    with profiler.profile() as prof:
        y.backward(retain_graph=True)
    assert y.args[0].back_fns is back_fns
    first = x.grad.numpy().copy()
    x.grad = None
    y.backward()  # untimed, through the original back_fns
    np.testing.assert_allclose(x.grad.numpy(), first)
    assert any(e.name.endswith("_backward") for e in prof.events())


def test_autograd_profiler_names():
    x = leaf(2)
    with autograd_profiler.profile(record_shapes=True) as prof:
        with autograd_profiler.record_function("step"):
            x.exp().sum().backward()
    assert isinstance(prof.function_events, autograd_profiler.EventList)
    assert "step" in prof.table() and prof.self_cpu_time_total >= 0
    assert prof.key_averages().total_average().count == len(prof.function_events)
    with autograd_profiler.profile(enabled=False) as off:
        x.exp()
    with pytest.raises(RuntimeError, match="not finished"):
        off.key_averages()
    with pytest.warns(FutureWarning, match="use_cuda"):
        autograd_profiler.profile(use_cuda=True)
    assert tc.autograd.profiler is autograd_profiler  # torch.autograd.profiler's place


def test_profile_arguments_as_torchs():
    assert profiler.ProfilerActivity.CPU in profiler.supported_activities()
    assert [a.name for a in ProfilerAction] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"]
    with pytest.warns(UserWarning, match="with_flops"):
        profiler.profile(with_flops=True)
    with pytest.raises(TypeError, match="activities"):
        profiler.profile(activities=["cpu"])
    with pytest.warns(FutureWarning, match="use_cuda"):
        prof = profiler.profile(use_cuda=False)
    assert profiler.ProfilerActivity.CUDA not in prof.activities

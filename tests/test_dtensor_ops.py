"""DTensor runs ops by propagating placements (tricycle/parallel/dtensor.py,
dtensor_dispatch.py, dtensor_shapes.py) and ``loss_parallel`` (loss_parallel.py).

Two CPU ranks under mpiexec run every case of CASES (pointwise ops with numbers, 0-d and
replicated operands, matmul and F.linear, sums and means, softmax, views) on DTensors of
the case's placements: each rank's output placements equal torch 2.13's (what two gloo
ranks of torch's DTensor gave for the same case, written beside it), its whole value and
every input's gradient (through ``full_tensor``) equal one process computing the whole
tensors with tricycle and with torch. Cross-entropy inside ``loss_parallel()`` of logits
sharded over the classes (even and uneven pieces, weights, ignore_index, the three
reductions, 3-D logits, a ColwiseParallel head) equals torch's ``F.cross_entropy``, loss
and gradients. A world of one runs every case too, checks the refusals, and the loss's
backward against finite differences.

Run as a script (``mpiexec -n 2 python tests/test_dtensor_ops.py OUT``) this file is the
ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.nn.functional as tF
from tests.multirank import ranks_findings, write_from_rank_0
from tests.test_distributed import needs_mpi
from tricycle import backend
from tricycle.distributed.device_mesh import init_device_mesh
from tricycle.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from tricycle.distributed.tensor.experimental import implicit_replication
from tricycle.distributed.tensor.parallel import (
    ColwiseParallel,
    loss_parallel,
    parallelize_module,
)
from tricycle.parallel import distributed as world_module
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

PLACEMENTS = {"R": Replicate(), "S0": Shard(0), "S1": Shard(1), "S2": Shard(2),
              "P": Partial(), "Pavg": Partial("avg")}  # fmt: skip

# name: (inputs {name: (shape, placement)}, f(F, *inputs), torch 2.13's output placement
# on two ranks). F is tricycle.nn.functional or torch.nn.functional; "b" broadcasts.
CASES = {
    # matmul and linear
    "S1@S0": ({"a": ((4, 6), "S1"), "b": ((6, 5), "S0")}, lambda F, a, b: a @ b, "P"),
    "R@S1": ({"a": ((4, 6), "R"), "b": ((6, 5), "S1")}, lambda F, a, b: a @ b, "S1"),
    "S0@R": ({"a": ((4, 6), "S0"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "S0"),
    "S0@S0": ({"a": ((4, 6), "S0"), "b": ((6, 5), "S0")}, lambda F, a, b: a @ b, "S0"),
    "S1@S1": ({"a": ((4, 6), "S1"), "b": ((6, 5), "S1")}, lambda F, a, b: a @ b, "S1"),
    "S1@R": ({"a": ((4, 6), "S1"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "P"),
    "P@R": ({"a": ((4, 6), "P"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "P"),
    "P@S1": ({"a": ((4, 6), "P"), "b": ((6, 5), "S1")}, lambda F, a, b: a @ b, "P"),
    "S2@R 3-D": ({"a": ((2, 4, 6), "S2"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "P"),
    "S0@R 3-D": ({"a": ((2, 4, 6), "S0"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "S0"),
    "S1@R 3-D": ({"a": ((2, 4, 6), "S1"), "b": ((6, 5), "R")}, lambda F, a, b: a @ b, "S1"),
    "R@S1 3-D": ({"a": ((2, 4, 6), "R"), "b": ((6, 5), "S1")}, lambda F, a, b: a @ b, "S2"),
    "S0@S0 batch": (
        {"a": ((2, 4, 6), "S0"), "b": ((2, 6, 5), "S0")},
        lambda F, a, b: a @ b,
        "S0",
    ),  # fmt: skip
    "linear colwise": (
        {"x": ((4, 6), "R"), "w": ((5, 6), "S0"), "b": ((5,), "S0")},
        lambda F, x, w, b: F.linear(x, w, b),
        "S1",
    ),  # fmt: skip
    "linear rowwise": (
        {"x": ((4, 6), "S1"), "w": ((5, 6), "S1"), "b": ((5,), "R")},
        lambda F, x, w, b: F.linear(x, w, b),
        "P",
    ),  # fmt: skip
    "linear batch": (
        {"x": ((4, 6), "S0"), "w": ((5, 6), "R")},
        lambda F, x, w: F.linear(x, w),
        "S0",
    ),  # fmt: skip
    # pointwise
    "S1+R": ({"a": ((4, 6), "S1"), "b": ((4, 6), "R")}, lambda F, a, b: a + b, "S1"),
    "S1+R row": ({"a": ((4, 6), "S1"), "b": ((6,), "R")}, lambda F, a, b: a + b, "S1"),
    "S0*R row": ({"a": ((4, 6), "S0"), "b": ((6,), "R")}, lambda F, a, b: a * b, "S0"),
    "S1+S0": ({"a": ((4, 6), "S1"), "b": ((4, 6), "S0")}, lambda F, a, b: a + b, "S0"),
    "S0-S1": ({"a": ((4, 6), "S0"), "b": ((4, 6), "S1")}, lambda F, a, b: a - b, "S0"),
    "S1*S1": ({"a": ((4, 6), "S1"), "b": ((4, 6), "S1")}, lambda F, a, b: a * b, "S1"),
    "P+P": ({"a": ((4, 6), "P"), "b": ((4, 6), "P")}, lambda F, a, b: a + b, "P"),
    "P-P": ({"a": ((4, 6), "P"), "b": ((4, 6), "P")}, lambda F, a, b: a - b, "P"),
    "P*P": ({"a": ((4, 6), "P"), "b": ((4, 6), "P")}, lambda F, a, b: a * b, "P"),
    "P+R": ({"a": ((4, 6), "P"), "b": ((4, 6), "R")}, lambda F, a, b: a + b, "P"),
    "R-P": ({"a": ((4, 6), "R"), "b": ((4, 6), "P")}, lambda F, a, b: a - b, "P"),
    "R*P": ({"a": ((4, 6), "R"), "b": ((4, 6), "P")}, lambda F, a, b: a * b, "P"),
    "R/P": ({"a": ((4, 6), "R"), "b": ((4, 6), "P")}, lambda F, a, b: a / (b * b + 1), "R"),
    "P/P": ({"a": ((4, 6), "P"), "b": ((4, 6), "P")}, lambda F, a, b: a / b, "P"),
    "P+S1": ({"a": ((4, 6), "P"), "b": ((4, 6), "S1")}, lambda F, a, b: a + b, "S1"),
    "P*S1": ({"a": ((4, 6), "P"), "b": ((4, 6), "S1")}, lambda F, a, b: a * b, "S1"),
    "P*2": ({"a": ((4, 6), "P")}, lambda F, a: a * 2, "P"),
    "P/2": ({"a": ((4, 6), "P")}, lambda F, a: a / 2, "P"),
    "-P": ({"a": ((4, 6), "P")}, lambda F, a: -a, "P"),
    "P+2": ({"a": ((4, 6), "P")}, lambda F, a: a + 2, "R"),
    "2-P": ({"a": ((4, 6), "P")}, lambda F, a: 2 - a, "R"),
    "P**2": ({"a": ((4, 6), "P")}, lambda F, a: a**2, "R"),
    "P.exp": ({"a": ((4, 6), "P")}, lambda F, a: a.exp(), "R"),
    "S1.tanh": ({"a": ((4, 6), "S1")}, lambda F, a: a.tanh(), "S1"),
    "S1**2": ({"a": ((4, 6), "S1")}, lambda F, a: a.pow(2) * 3, "S1"),
    "2/S1": ({"a": ((4, 6), "S1")}, lambda F, a: 2 / (a * a + 1), "S1"),
    "gelu S1": ({"a": ((4, 6), "S1")}, lambda F, a: F.gelu(a), "S1"),
    "gelu tanh S0": ({"a": ((4, 6), "S0")}, lambda F, a: F.gelu(a, approximate="tanh"), "S0"),
    "relu P": ({"a": ((4, 6), "P")}, lambda F, a: F.relu(a), "R"),
    "silu S0": ({"a": ((5, 6), "S0")}, lambda F, a: F.silu(a), "S0"),
    "exp S0 uneven": ({"a": ((5, 3), "S0")}, lambda F, a: a.exp() - a, "S0"),
    # reductions
    "S1.sum": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum(), "P"),
    "S1.sum(1)": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum(1), "P"),
    "S1.sum(0)": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum(0), "S0"),
    "S1.sum(1) keep": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum(1, keepdim=True), "P"),
    "S1.sum(0) keep": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum(0, keepdim=True), "S1"),
    "S1.sum(0, 1)": ({"a": ((4, 6), "S1")}, lambda F, a: a.sum((0, 1)), "P"),
    "S1.mean(1)": ({"a": ((4, 6), "S1")}, lambda F, a: a.mean(1), "Pavg"),
    "S1.mean": ({"a": ((4, 6), "S1")}, lambda F, a: a.mean(), "Pavg"),
    "S0.mean(0) uneven": ({"a": ((5, 3), "S0")}, lambda F, a: a.mean(0), "R"),
    "P.sum(0)": ({"a": ((4, 6), "P")}, lambda F, a: a.sum(0), "P"),
    "P.mean(0)": ({"a": ((4, 6), "P")}, lambda F, a: a.mean(0), "R"),
    "Pavg*2": ({"a": ((4, 6), "Pavg")}, lambda F, a: a * 2, "Pavg"),
    # softmax
    "S1.softmax(1)": ({"a": ((4, 6), "S1")}, lambda F, a: a.softmax(1), "R"),
    "S1.softmax(0)": ({"a": ((4, 6), "S1")}, lambda F, a: a.softmax(0), "S1"),
    "F.log_softmax S0": ({"a": ((4, 6), "S0")}, lambda F, a: F.log_softmax(a, dim=-1), "S0"),
    "F.softmax P": ({"a": ((4, 6), "P")}, lambda F, a: F.softmax(a, dim=1), "R"),
    # views
    "S1.view(2,2,6)": ({"a": ((4, 6), "S1")}, lambda F, a: a.view(2, 2, 6), "S2"),
    "S1.view(4,2,3)": ({"a": ((4, 6), "S1")}, lambda F, a: a.view(4, 2, 3), "S1"),
    "S0.view(24)": ({"a": ((4, 6), "S0")}, lambda F, a: a.view(24), "S0"),
    "S0.view(8,3)": ({"a": ((4, 6), "S0")}, lambda F, a: a.view(8, 3), "S0"),
    "S2.view(8,6)": ({"a": ((2, 4, 6), "S2")}, lambda F, a: a.view(8, 6), "S1"),
    "S2.reshape(-1,6)": ({"a": ((2, 4, 6), "S2")}, lambda F, a: a.reshape(-1, 6), "S1"),
    "S2.flatten(0,1)": ({"a": ((2, 4, 6), "S2")}, lambda F, a: a.flatten(0, 1), "S1"),
    "S2.view(2,4,1,6)": ({"a": ((2, 4, 6), "S2")}, lambda F, a: a.view(2, 4, 1, 6), "S3"),
    "S2.view(2,4,2,3)": ({"a": ((2, 4, 6), "S2")}, lambda F, a: a.view(2, 4, 2, 3), "S2"),
    "S1.transpose(1,2)": ({"a": ((2, 4, 6), "S1")}, lambda F, a: a.transpose(1, 2), "S2"),
    "S1.permute(2,0,1)": ({"a": ((2, 4, 6), "S1")}, lambda F, a: a.permute(2, 0, 1), "S2"),
    "S1.T": ({"a": ((4, 6), "S1")}, lambda F, a: a.T, "S0"),
    "S0 uneven view": ({"a": ((5, 3), "S0")}, lambda F, a: a.view(5, 3, 1), "S0"),
    # a chain: an attention-like block on a shard of heads
    "heads": (
        {"q": ((2, 4, 6), "S2"), "k": ((2, 4, 6), "S2")},
        lambda F, q, k: (
            q.view(2, 4, 2, 3).transpose(1, 2) @ k.view(2, 4, 2, 3).permute(0, 2, 3, 1)
        ).softmax(-1),
        "S1",
    ),  # fmt: skip
}
REFUSED = {  # views torch refuses too (or keeps as its _StridedShard)
    "S1.view(24)": (((4, 6), "S1"), (24,)),
    "S2.view(2,4,3,2)": (((2, 4, 6), "S2"), (2, 4, 3, 2)),
    "S0 uneven.view(15)": (((5, 3), "S0"), (15,)),
}


def placement(name: str):
    return Shard(int(name[1:])) if name[0] == "S" and name[1:].isdigit() else PLACEMENTS[name]


def arrays(case: str) -> dict:
    """The case's whole inputs (float64), the same in every process."""
    rng = np.random.default_rng(sum(map(ord, case)))
    return {n: rng.standard_normal(shape) for n, (shape, _) in CASES[case][0].items()}


def dtensor_input(value: np.ndarray, mesh, where: str):
    """``value`` (whole) as a DTensor placed as ``where`` and the leaf that gets its
    gradient: distribute_tensor's, or a Partial's addends (rank r's (r + 1) / sum of them)."""
    p = placement(where)
    if not p.is_partial():
        d = distribute_tensor(Tensor(value, requires_grad=True), mesh, [p])
        return d, d._local_tensor
    n, rank = mesh.size(), mesh.get_local_rank()
    share = (rank + 1) / (n * (n + 1) / 2) if p.reduce_op == "sum" else (rank + 1) * 2 / (n + 1)
    leaf = Tensor(value * share, requires_grad=True)
    return DTensor.from_local(leaf, mesh, [p]), leaf


def run_case(case: str, mesh) -> dict:
    """The case on DTensors: output placements, local shape, whole value, and the whole
    gradient of each input under the loss sum(out * weights)."""
    specs, f, _ = CASES[case]
    inputs = arrays(case)
    made = {n: dtensor_input(inputs[n], mesh, where) for n, (_, where) in specs.items()}
    out = f(tF, *(d for d, _ in made.values()))
    whole = out.full_tensor()
    weights = np.random.default_rng(7).standard_normal(whole.shape)
    (whole * Tensor(weights)).sum().backward()
    grads = {}
    for n, (d, leaf) in made.items():
        grad = Tensor(leaf.grad.array)
        grad_placements = tuple(Replicate() if p.is_partial() else p for p in d.placements)
        grads[n] = DTensor(grad, mesh, grad_placements, d.shape).full_tensor().numpy().copy()
    return {"placements": out.placements, "local": tuple(out.to_local().shape),
            "value": whole.numpy().copy(), "grads": grads}  # fmt: skip


def expected(case: str, library: str) -> dict:
    """The case on whole tensors in one process: tricycle's or torch's."""
    specs, f, _ = CASES[case]
    inputs = arrays(case)
    if library == "torch":
        torch = pytest.importorskip("torch")
        xs = {n: torch.tensor(v, requires_grad=True) for n, v in inputs.items()}
        out = f(torch.nn.functional, *xs.values())
        weights = torch.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)))
        (out * weights).sum().backward()
        return {"value": out.detach().numpy(), "grads": {n: x.grad.numpy() for n, x in xs.items()}}
    xs = {n: Tensor(v, requires_grad=True) for n, v in inputs.items()}
    out = f(tF, *xs.values())
    weights = np.random.default_rng(7).standard_normal(out.shape)
    (out * Tensor(weights)).sum().backward()
    return {"value": out.numpy(), "grads": {n: x.grad.numpy() for n, x in xs.items()}}


def assert_case(got: dict, case: str, where: str) -> None:
    for library in ("tricycle", "torch"):
        want = expected(case, library)
        np.testing.assert_allclose(got["value"], want["value"], rtol=1e-10, atol=1e-12,
                                   err_msg=f"{case} {where} vs {library}")  # fmt: skip
        for n, grad in want["grads"].items():
            np.testing.assert_allclose(got["grads"][n], grad, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{case} {where} grad {n} vs {library}")  # fmt: skip


# ---------------------------------------------------------------------- loss_parallel
LOSSES = {  # name: (logits shape, logits placement, cross_entropy keywords)
    "mean": ((4, 6), "S1", {}),
    "sum": ((4, 6), "S1", {"reduction": "sum"}),
    "none": ((4, 6), "S1", {"reduction": "none"}),
    "uneven, weighted": ((4, 5), "S1", {"weight": True}),
    "weighted sum, no ignore": (
        (4, 5),
        "S1",
        {"weight": True, "reduction": "sum", "ignore_index": None},
    ),
    "3-D": ((3, 6, 2), "S1", {}),
    "1-D": ((6,), "S0", {}),
}


def loss_inputs(name: str):
    shape, where, keywords = LOSSES[name]
    rng = np.random.default_rng(len(name))
    logits = rng.standard_normal(shape)
    class_dim = 1 if len(shape) > 1 else 0
    ids = rng.integers(0, shape[class_dim], shape[:class_dim] + shape[class_dim + 1 :])
    if ids.ndim and keywords.get("ignore_index", -100) is not None:
        ids.reshape(-1)[0] = -100  # an ignored target
    weight = rng.random(shape[class_dim]) + 0.5 if keywords.get("weight") else None
    return logits, ids, weight, where, {k: v for k, v in keywords.items() if k != "weight"}


def run_loss(name: str, mesh) -> dict:
    logits, ids, weight, where, keywords = loss_inputs(name)
    d = distribute_tensor(Tensor(logits, requires_grad=True), mesh, [placement(where)])
    w = None if weight is None else Tensor(weight)
    with loss_parallel():
        loss = tF.cross_entropy(d, Tensor(ids), w, **keywords)
    weights = np.random.default_rng(3).standard_normal(loss.shape)
    seed = DTensor.from_local(Tensor(weights), mesh, [Replicate()]) if loss.shape else None
    loss.backward(seed)  # a DTensor's backward, seeded by a DTensor or by ones
    grad = d.grad.full_tensor().numpy().copy()
    return {"placements": loss.placements, "value": loss.full_tensor().numpy().copy(),
            "grad": grad}  # fmt: skip


def torch_loss(name: str) -> dict:
    torch = pytest.importorskip("torch")
    logits, ids, weight, _, keywords = loss_inputs(name)
    if keywords.get("ignore_index", -100) is None:
        keywords = dict(keywords, ignore_index=-100)  # none of the ids is -100 then
    x = torch.tensor(logits, requires_grad=True)
    w = None if weight is None else torch.tensor(weight)
    loss = torch.nn.functional.cross_entropy(x, torch.tensor(ids), w, **keywords)
    seed = torch.tensor(np.random.default_rng(3).standard_normal(tuple(loss.shape)))
    loss.backward(seed if loss.ndim else None)
    return {"value": loss.detach().numpy(), "grad": x.grad.numpy()}


def head_training(mesh, steps: int = 2) -> dict:
    """A vocabulary head colwise over the ranks (its logits a Shard(-1) DTensor) trained
    with loss_parallel; the same head whole when ``mesh`` is None."""
    manual_seed(0)
    head = nn.Linear(4, 7)
    if mesh is not None:
        plan = ColwiseParallel(output_layouts=Shard(-1), use_local_output=False)
        parallelize_module(head, mesh, plan)
    rng = np.random.default_rng(5)
    x, ids = Tensor(rng.standard_normal((2, 3, 4))), rng.integers(0, 7, (2, 3))
    seen = {"losses": []}
    for _ in range(steps):
        logits = head(x)  # (2, 3, 7)
        with loss_parallel():
            loss = tF.cross_entropy(logits.flatten(0, 1), Tensor(ids.reshape(-1)))
        loss.backward()
        seen["losses"].append(float((loss.full_tensor() if mesh else loss).numpy()))
        whole = head.weights.full_tensor() if mesh else head.weights
        seen["weights"] = whole.numpy().copy()
        for p in head.parameters():  # a step of SGD on this rank's values
            p.array = p.array - 0.5 * p.grad.array
            p.grad = None
    return seen


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_propagate_as_torch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for rank, seen in enumerate(got):
        for case, (_, _, torch_placement) in CASES.items():
            found = seen["cases"][case]
            assert found["placements"] == (placement(torch_placement),), (case, rank)
            assert_case(found, case, f"rank {rank}")
        for case, message in seen["refused"].items():
            assert "redistribute" in message and "sharded on dimension" in message, case
        for name in LOSSES:
            found, want = seen["losses"][name], torch_loss(name)
            assert found["placements"] == (Replicate(),), name
            np.testing.assert_allclose(found["value"], want["value"], rtol=1e-10, err_msg=name)
            np.testing.assert_allclose(found["grad"], want["grad"], rtol=1e-9, atol=1e-12,
                                       err_msg=name)  # fmt: skip
        whole = head_training(None)
        np.testing.assert_allclose(seen["head"]["losses"], whole["losses"], rtol=1e-6)
        np.testing.assert_allclose(seen["head"]["weights"], whole["weights"], rtol=1e-6)
        assert seen["head"]["losses"][1] < seen["head"]["losses"][0]
        assert seen["local S1@S0"] == (4, 5) and seen["local S1.view(2,2,6)"] == (2, 2, 3)


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2,))
    seen = {"cases": {case: run_case(case, mesh) for case in CASES}, "refused": {}}
    for case, ((shape, where), target) in REFUSED.items():
        d = distribute_tensor(Tensor(np.zeros(shape)), mesh, [placement(where)])
        try:
            d.view(*target)
        except RuntimeError as e:
            seen["refused"][case] = str(e)
    seen["losses"] = {name: run_loss(name, mesh) for name in LOSSES}
    seen["head"] = head_training(mesh)
    seen["local S1@S0"] = seen["cases"]["S1@S0"]["local"]
    seen["local S1.view(2,2,6)"] = seen["cases"]["S1.view(2,2,6)"]["local"]
    write_from_rank_0(seen, out)


@pytest.fixture(autouse=True)
def group():
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


# ====================================================================== a world of one
@pytest.mark.parametrize("case", list(CASES))
def test_a_world_of_one_runs_every_case(case):
    mesh = init_device_mesh("cpu", (1,))
    assert_case(run_case(case, mesh), case, "a world of one")


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_parallel_in_a_world_of_one_equals_torch(name):
    found, want = run_loss(name, init_device_mesh("cpu", (1,))), torch_loss(name)
    np.testing.assert_allclose(found["value"], want["value"], rtol=1e-10)
    np.testing.assert_allclose(found["grad"], want["grad"], rtol=1e-9, atol=1e-12)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(rows=st.integers(1, 3), classes=st.integers(1, 5), reduction=st.sampled_from(
    ["mean", "sum", "none"]), weighted=st.booleans(), seed=st.integers(0, 1000))  # fmt: skip
def test_loss_parallel_gradient_is_the_finite_difference(rows, classes, reduction, weighted, seed):
    rng = np.random.default_rng(seed)
    logits, ids = rng.standard_normal((rows, classes)), rng.integers(0, classes, rows)
    ids[0] = -100 if rows > 1 else ids[0]
    weight = Tensor(rng.random(classes) + 0.5) if weighted else None
    outer = rng.standard_normal(rows if reduction == "none" else ())
    mesh = init_device_mesh("cpu", (1,))

    def loss_of(values: np.ndarray, grad: bool = False):
        d = distribute_tensor(Tensor(values, requires_grad=grad), mesh, [Shard(1)])
        with loss_parallel():
            loss = tF.cross_entropy(d, Tensor(ids), weight, reduction=reduction)
        return d, (loss * DTensor.from_local(Tensor(outer), mesh, [Replicate()])).sum()

    d, loss = loss_of(logits, grad=True)
    loss.backward()
    numeric = np.zeros_like(logits)
    for index in np.ndindex(logits.shape):
        step = np.zeros_like(logits)
        step[index] = 1e-6
        up, down = (float(loss_of(logits + s)[1].full_tensor().numpy()) for s in (step, -step))
        numeric[index] = (up - down) / 2e-6
    np.testing.assert_allclose(d.grad.full_tensor().numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_refusals_in_a_world_of_one():
    mesh = init_device_mesh("cpu", (1,))
    d = distribute_tensor(Tensor(np.ones((4, 6))), mesh, [Shard(1)])
    for mixed in (lambda: d + Tensor(np.ones((4, 6))), lambda: Tensor(np.ones((4, 6))) * d):
        with pytest.raises(RuntimeError, match="mixed Tensor and DTensor"):
            mixed()  # a plain Tensor on either side: the DTensor answers, as torch's
    with pytest.raises(ValueError, match=r"shapes \(4, 6\) and \(5,\) do not broadcast"):
        d + distribute_tensor(Tensor(np.ones(5)), mesh, [Replicate()])
    with pytest.raises(ValueError, match="cannot be multiplied"):
        d @ d
    with pytest.raises(ValueError, match="different meshes"):
        d + distribute_tensor(Tensor(np.ones(6)), init_device_mesh("cpu", (1, 1)),
                              [Replicate(), Replicate()])  # fmt: skip
    with pytest.raises(NotImplementedError, match="inplace=True"):
        tF.relu(d, inplace=True)
    with pytest.raises(NotImplementedError, match="F.elu"):
        DTensor.__tricycle_function__(tF.elu, (d,), {})
    with pytest.raises(IndexError, match="dim 2"):
        d.sum(2)
    with pytest.raises(ValueError, match="not a permutation"):
        d.permute(0, 0)
    ids = Tensor(np.array([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="loss_parallel"):
        tF.cross_entropy(d, ids)
    with loss_parallel():
        with pytest.raises(NotImplementedError, match="label_smoothing"):
            tF.cross_entropy(d, ids, label_smoothing=0.1)
        with pytest.raises(NotImplementedError, match="class probabilities"):
            tF.cross_entropy(d, Tensor(np.full((4, 6), 1 / 6)))
        with pytest.raises(ValueError, match="exactly one mesh dim"):
            tF.cross_entropy(d.redistribute(placements=[Replicate()]), ids)
        with pytest.raises(IndexError, match="class ids"):
            tF.cross_entropy(d, Tensor(np.array([0, 1, 2, 6])))


def test_scalars_zero_d_tensors_and_implicit_replication():
    mesh = init_device_mesh("cpu", (1,))
    a = np.arange(24.0).reshape(4, 6)
    bias = Tensor(np.arange(6.0), requires_grad=True)
    d = distribute_tensor(Tensor(a, requires_grad=True), mesh, [Shard(0)])
    scale = Tensor(np.array(3.0), requires_grad=True)
    with implicit_replication():
        out = (d * scale + bias).sum()
    out.backward()
    np.testing.assert_allclose(out.full_tensor().numpy(), (a * 3 + np.arange(6.0)).sum())
    np.testing.assert_allclose(bias.grad.numpy(), np.full(6, 4.0))
    np.testing.assert_allclose(scale.grad.numpy(), a.sum())
    np.testing.assert_allclose(d.grad.full_tensor().numpy(), np.full((4, 6), 3.0))
    assert (d * 2).placements == (Shard(0),) and (d.detach().requires_grad is False)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_a_world_of_one_on_a_gpu_equals_the_host():
    mesh = init_device_mesh("cuda", (1,))
    for case in ("S1@S0", "linear colwise", "S1.mean(1)", "heads", "P/P"):
        specs, f, _ = CASES[case]
        inputs = arrays(case)
        ds = [distribute_tensor(Tensor(inputs[n]).to("cuda"), mesh, [placement(w)])
              for n, (_, w) in specs.items()]  # fmt: skip
        out = f(tF, *ds).full_tensor()
        assert out.on_gpu
        np.testing.assert_allclose(out.numpy(), expected(case, "tricycle")["value"], rtol=1e-10)
    logits, ids, weight, where, keywords = loss_inputs("uneven, weighted")
    d = distribute_tensor(Tensor(logits, requires_grad=True).to("cuda"), mesh, [Shard(1)])
    with loss_parallel():
        loss = tF.cross_entropy(d, Tensor(ids).to("cuda"), Tensor(weight).to("cuda"), **keywords)
    loss.backward()
    want = torch_loss("uneven, weighted")
    np.testing.assert_allclose(loss.full_tensor().numpy(), want["value"], rtol=1e-10)
    np.testing.assert_allclose(d.grad.full_tensor().numpy(), want["grad"], rtol=1e-9, atol=1e-12)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])


def test_cross_entropy_loss_module_under_loss_parallel_as_the_function():
    mesh = init_device_mesh("cpu", (1,))
    logits = np.random.default_rng(5).standard_normal((4, 6))
    ids = np.array([0, 5, 2, 3])
    found = []
    for loss_fn in (nn.CrossEntropyLoss(), tF.cross_entropy):  # the fused module path too
        d = distribute_tensor(Tensor(logits, requires_grad=True), mesh, [Shard(1)])
        with loss_parallel():
            loss = loss_fn(d, Tensor(ids))
        loss.backward()
        found.append((float(loss.full_tensor().numpy()), d.grad.full_tensor().numpy()))
    (module_loss, module_grad), (function_loss, function_grad) = found
    np.testing.assert_allclose(module_loss, function_loss, rtol=1e-12)
    np.testing.assert_allclose(module_grad, function_grad, rtol=1e-12)
    shifted = logits - logits.max(1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    np.testing.assert_allclose(module_loss, -log_p[np.arange(4), ids].mean(), rtol=1e-12)

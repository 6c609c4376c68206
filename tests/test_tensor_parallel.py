"""Tensor parallelism as torch's (tricycle/parallel/device_mesh.py, dtensor.py, dtensor_ops.py,
tensor_parallel.py, collectives_autograd.py): DeviceMesh, DTensor, parallelize_module and the
differentiable collectives. A world of one behaves as the plain module (and the plain module
as torch's); two CPU ranks under mpiexec run torch's canonical tensor parallel examples (an
MLP: the first Linear colwise, the second rowwise; an attention block with its heads split;
the MLP under sequence parallelism with a LayerNorm) for a few AdamW steps and equal one
process (outputs, losses, gradients, parameters after the steps); DTensor round trips over
uneven shards; the collectives' gradients; refusals as torch's.

Run as a script (``mpiexec -n 2 python tests/test_tensor_parallel.py OUT``) this file is the
ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.distributed.nn.functional as dfn
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import ranks_findings, write_from_rank_0
from tests.test_distributed import needs_mpi
from tricycle import backend
from tricycle.distributed.device_mesh import DeviceMesh, init_device_mesh
from tricycle.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from tricycle.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)
from tricycle.parallel import distributed as world_module
from tricycle.parallel.dtensor import DParameter
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

STEPS = 3
WAYS = ("mlp", "attention", "sequence", "embedding")


class MLP(nn.Module):
    def __init__(self, norm: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(4) if norm else None
        self.w1, self.w2 = nn.Linear(4, 8), nn.Linear(8, 4)

    def forward(self, x):
        x = self.norm(x) if self.norm is not None else x
        out = self.w2(self.w1(x).relu())
        return out.full_tensor() if isinstance(out, DTensor) else out


class Attention(nn.Module):
    def __init__(self, dim: int = 8, heads: int = 2):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq, self.wv = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.wk = nn.Linear(dim, dim, bias=False)  # a key's bias moves no softmax: no gradient
        self.wo = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))  # fmt: skip
        att = (q @ k.transpose(-2, -1) / self.head_dim**0.5).softmax(-1)
        return self.wo((att @ v).transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.out = nn.Embedding(10, 8), nn.Linear(8, 4)

    def forward(self, ids):
        return self.out(self.embed(ids))


def build(way: str):
    manual_seed(0)
    if way == "embedding":
        return Embedder()
    return Attention() if way == "attention" else MLP(norm=way == "sequence")


def plan(way: str, mesh):
    if way == "mlp":
        return {"w1": ColwiseParallel(), "w2": RowwiseParallel()}
    if way == "attention":
        return {"w[qkv]": ColwiseParallel(), "wo": RowwiseParallel()}
    if way == "embedding":  # the vectors' features sharded, then gathered by the Linear
        return {"embed": ColwiseParallel(), "out": RowwiseParallel()}
    return {  # the norm on a sequence shard; the Linears gather it and scatter back
        "norm": SequenceParallel(),
        "w1": ColwiseParallel(input_layouts=Shard(1)),
        "w2": RowwiseParallel(output_layouts=Shard(1), use_local_output=False),
    }


def parallel(way: str, mesh):
    model = parallelize_module(build(way), mesh, plan(way, mesh))
    if way == "attention":
        model.heads //= mesh.size()  # torch's tutorial: the local number of heads
    if way == "sequence":  # the whole input, as each rank's shard of the sequence
        whole = PrepareModuleInput(input_layouts=Replicate(), desired_input_layouts=Shard(1))
        parallelize_module(model, mesh, whole)
    return model


def batch(way: str):
    rng = np.random.default_rng(1)
    if way == "embedding":
        return rng.integers(0, 10, size=(2, 6)), rng.normal(size=(2, 6, 4)).astype(np.float32)
    d = 8 if way == "attention" else 4
    return rng.normal(size=(2, 6, d)).astype(np.float32), rng.normal(size=(2, 6, d)).astype(
        np.float32
    )


def full(tensor) -> np.ndarray:
    return (tensor.full_tensor() if isinstance(tensor, DParameter) else tensor).numpy().copy()


def full_grad(param) -> np.ndarray:
    if not isinstance(param, DParameter):
        return param.grad.numpy().copy()
    local = Tensor(param.grad.array, requires_grad=False)
    return (
        DTensor(local, param.device_mesh, param.placements, param.global_shape)
        .full_tensor()
        .numpy()
    )


def train(model, x, y, steps: int = STEPS, device: str = "cpu") -> dict:
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    seen = {"losses": []}
    x = Tensor(x, requires_grad=False).to(device)  # data: no graph back to the host copy
    y = Tensor(y, requires_grad=False).to(device)
    for step in range(steps):
        out = model(x)
        loss = ((out - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        if step == 0:
            seen["out"] = out.numpy().copy()
            seen["grads"] = {n: full_grad(p) for n, p in model.named_parameters()}
        opt.step()
        seen["losses"].append(float(loss))
    seen["state"] = {n: full(p) for n, p in model.named_parameters()}
    return seen


@pytest.fixture(autouse=True)
def group():
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


def assert_same(got: dict, expected: dict, what: str) -> None:
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, err_msg=what)
    np.testing.assert_allclose(got["out"], expected["out"], rtol=1e-5, atol=1e-6, err_msg=what)
    for kind in ("grads", "state"):
        assert got[kind].keys() == expected[kind].keys(), what
        for name, value in expected[kind].items():
            np.testing.assert_allclose(got[kind][name], value, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{what} {kind} {name}")  # fmt: skip


# ====================================================================== a world of one
@pytest.mark.parametrize("way", WAYS)
def test_a_world_of_one_trains_as_the_plain_module(way):
    x, y = batch(way)
    expected = train(build(way), x, y)
    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("tp",))
    model = parallel(way, mesh)
    assert all(isinstance(p, DParameter) for p in model.parameters())
    assert_same(train(model, x, y), expected, way)
    assert expected["losses"][-1] < expected["losses"][0]


def test_the_plain_mlp_equals_torchs():
    torch = pytest.importorskip("torch")
    x, y = batch("mlp")
    model = build("mlp")
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    with torch.no_grad():
        for layer, mine in ((twin[0], model.w1), (twin[2], model.w2)):
            layer.weight.copy_(torch.tensor(mine.weights.numpy().T))
            layer.bias.copy_(torch.tensor(mine.bias.numpy()))
    opt = torch.optim.AdamW(twin.parameters(), lr=0.05, weight_decay=0.1)
    losses = []
    for _ in range(STEPS):
        loss = ((twin(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seen = train(model, x, y)
    np.testing.assert_allclose(seen["losses"], losses, rtol=1e-5)
    np.testing.assert_allclose(seen["state"]["w1.weights"], twin[0].weight.detach().numpy().T,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_device_mesh_as_torchs():
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert (mesh.ndim, mesh.shape, mesh.size(), mesh.size(1)) == (2, (1, 1), 1, 1)
    assert mesh["tp"].mesh_dim_names == ("tp",) and mesh["tp"].get_local_rank() == 0
    assert mesh.get_local_rank("dp") == 0 and mesh.get_coordinate() == (0, 0)
    assert repr(mesh["tp"]) == "DeviceMesh((tp=1), 'cpu')"
    assert DeviceMesh("cpu", [0]) == init_device_mesh("cpu", (1,))
    with pytest.raises(RuntimeError, match="Mesh should not be bigger than default world size 1"):
        init_device_mesh("cpu", (2,))
    with pytest.raises(RuntimeError, match="should have same length"):
        init_device_mesh("cpu", (1,), mesh_dim_names=("a", "b"))
    with pytest.raises(RuntimeError, match="must be unique"):
        init_device_mesh("cpu", (1, 1), mesh_dim_names=("a", "a"))
    with pytest.raises(KeyError, match="Valid mesh_dim_names are"):
        mesh["x"]
    with pytest.raises(RuntimeError, match="needs to be specified"):
        mesh.get_local_rank()
    with pytest.raises(ValueError, match="1-D DeviceMesh"):
        parallelize_module(MLP(), mesh, {"w1": ColwiseParallel()})


def test_a_mesh_of_the_world_and_of_one_rank_needs_no_sub_group(monkeypatch):
    class FourRanks:  # (a (2, 2) mesh's sub-groups: tests/test_fsdp_hybrid.py, on 4 ranks)
        world_size, rank = 4, 0

    monkeypatch.setattr(world_module, "_world", FourRanks())
    mesh = init_device_mesh("cpu", (1, 4), mesh_dim_names=("dp", "tp"))
    assert (mesh["tp"].size(), mesh["tp"].get_local_rank(), mesh.get_coordinate()) == (4, 0, (0, 0))
    assert mesh["tp"].get_group() is None  # the World, as tricycle's collectives take it
    assert mesh.get_group("dp").size() == 1  # this rank alone: no communicator to split


def test_dtensor_in_a_world_of_one():
    mesh = init_device_mesh("cpu", (1,))
    x = Tensor(np.arange(6.0).reshape(2, 3))
    d = distribute_tensor(x, mesh, [Shard(-1)])
    assert d.placements == (Shard(1),) and d.shape == (2, 3) and str(d.placements[0]) == "S(1)"
    partial = d.redistribute(mesh, [Replicate()]).redistribute(placements=[Partial()])
    whole = partial.full_tensor()
    (whole * whole).sum().backward()
    np.testing.assert_allclose(whole.numpy(), x.numpy())
    np.testing.assert_allclose(d.to_local().grad.numpy(), 2 * x.numpy())
    assert (str(Replicate()), repr(Partial("avg")), Shard(1) == Shard(1)) == (
        "R",
        "Partial(avg)",
        True,
    )
    with pytest.raises(ValueError, match="must have the same length as `device_mesh.ndim`"):
        distribute_tensor(x, mesh, [Shard(1), Shard(0)])
    with pytest.raises(IndexError, match="Shard"):
        distribute_tensor(x, mesh, [Shard(2)])
    with pytest.raises(NotImplementedError, match="reduce_op 'max'"):
        Partial("max")
    with pytest.raises(RuntimeError, match="not supported"):
        d.redistribute(placements=[Partial()])
    with pytest.raises(RuntimeError, match="mixed Tensor and DTensor"):
        d + x  # a Tensor with dimensions is not read as Replicate (torch's refusal)
    with pytest.raises(NotImplementedError, match="ColwiseParallel"):
        parallelize_module(nn.LayerNorm(4), mesh, ColwiseParallel())


def test_plan_paths_with_patterns():
    mesh = init_device_mesh("cpu", (1,))
    model = nn.Module()
    model.layers = nn.ModuleList([nn.Sequential(nn.Linear(2, 4), nn.ReLU()) for _ in range(2)])
    parallelize_module(model, mesh, {"layers.*.0": ColwiseParallel()})
    assert all(isinstance(block[0].weights, DParameter) for block in model.layers)
    assert model.layers[0][0].weights.placements == (Shard(1),)  # torch's Shard(0) of (out, in)
    with pytest.raises(ValueError, match="no submodule matches"):
        parallelize_module(model, mesh, {"layers.*.5": ColwiseParallel()})
    with pytest.raises(TypeError, match="expect a ParallelStyle"):
        parallelize_module(model, mesh, [ColwiseParallel()])


def test_prepare_module_input_and_output():
    mesh = init_device_mesh("cpu", (1,))
    layer = nn.Linear(4, 4)
    parallelize_module(layer, mesh, PrepareModuleInput(input_layouts=Shard(0),
                                                       desired_input_layouts=Replicate(),
                                                       use_local_output=True))  # fmt: skip
    parallelize_module(layer, mesh, PrepareModuleOutput(output_layouts=Replicate(),
                                                        desired_output_layouts=Shard(0),
                                                        use_local_output=False))  # fmt: skip
    x = Tensor(np.ones((2, 4), np.float32))
    out = layer(x)
    assert isinstance(out, DTensor) and out.placements == (Shard(0),)
    with pytest.raises(AssertionError, match="same length"):
        PrepareModuleInput(input_layouts=(Shard(0), None), desired_input_layouts=Replicate())


def test_collectives_in_a_world_of_one():
    x = Tensor(np.arange(3.0), requires_grad=True)
    (dfn.all_reduce(x) * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])
    (gathered,) = dfn.all_gather(x)
    np.testing.assert_allclose(gathered.numpy(), x.numpy())
    with pytest.raises(NotImplementedError, match="SUM or AVG"):
        dfn.all_reduce(x, op=dist.ReduceOp.MAX)
    with pytest.raises(ValueError, match="src=1"):
        dfn.broadcast(x, 1)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_a_world_of_one_on_a_gpu_trains_as_on_the_host():
    x, y = batch("mlp")
    expected = train(build("mlp"), x, y)
    mesh = init_device_mesh("cuda", (1,))
    model = parallel("mlp", mesh).to("cuda")
    assert all(p.on_gpu for p in model.parameters())
    seen = train(model, x, y, device="cuda")
    np.testing.assert_allclose(seen["losses"], expected["losses"], rtol=1e-4)
    for name, value in expected["state"].items():
        np.testing.assert_allclose(seen["state"][name], value, rtol=1e-4, atol=1e-5, err_msg=name)


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_equal_one_process(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for way in WAYS:
        x, y = batch(way)
        expected = train(build(way), x, y)
        for rank in range(2):
            assert_same(got[rank][way], expected, f"{way} rank {rank}")
        held = got[0]["held"][way] + got[1]["held"][way]  # a half of each sharded one
        assert held == got[0]["whole"][way] + got[0]["replicated"][way], way
        replicated = {"mlp": 4, "attention": 8, "sequence": 12, "embedding": 4}[way]
        assert got[0]["replicated"][way] == replicated, way
    whole = np.arange(15.0).reshape(5, 3)
    for rank, seen in enumerate(got):
        rows = slice(0, 3) if rank == 0 else slice(3, 5)  # torch.chunk's uneven pieces
        np.testing.assert_allclose(seen["dtensor"]["local"], whole[rows])
        np.testing.assert_allclose(
            seen["dtensor"]["columns"], whole[:, [0, 1]] if rank == 0 else whole[:, [2]]
        )
        np.testing.assert_allclose(seen["dtensor"]["full"], whole)
        np.testing.assert_allclose(seen["dtensor"]["summed"], 3 * whole)  # Partial: 1 + 2
        np.testing.assert_allclose(seen["dtensor"]["grad"], 2 * whole[rows])
        c = seen["collectives"]
        both = [np.arange(4.0) * (r + 1) for r in range(2)]  # what each rank sends
        np.testing.assert_allclose(c["all_reduce"], both[0] + both[1])
        np.testing.assert_allclose(c["all_reduce_grad"], np.full(4, 1.0 + 2.0))
        np.testing.assert_allclose(c["all_gather"], both)
        np.testing.assert_allclose(c["all_gather_grad"], np.full(4, 2 * (rank + 1.0)))
        np.testing.assert_allclose(c["reduce_scatter"], (both[0] + both[1]).reshape(2, 2)[rank])
        np.testing.assert_allclose(c["reduce_scatter_grad"], [[1, 1], [2, 2]])
        np.testing.assert_allclose(c["broadcast"], both[0])
        np.testing.assert_allclose(c["broadcast_grad"], np.full(4, 3.0) if rank == 0 else 0)


def dtensor_round_trips(mesh) -> dict:
    rank = mesh.get_local_rank()
    whole = Tensor(np.arange(15.0).reshape(5, 3) * (rank + 1), requires_grad=True)
    d = distribute_tensor(whole, mesh, [Shard(0)])  # rank 0's values, uneven rows
    columns = d.redistribute(placements=[Shard(1)])
    full = columns.redistribute(placements=[Replicate()]).full_tensor()
    (full * full).sum().backward()
    base = Tensor(np.arange(15.0).reshape(5, 3) * (rank + 1))
    summed = DTensor.from_local(base, mesh, [Partial()]).full_tensor()
    return {"local": d.to_local().numpy().copy(), "columns": columns.to_local().numpy().copy(),
            "full": full.numpy().copy(), "summed": summed.numpy().copy(),
            "grad": d.grad.to_local().numpy().copy()}  # fmt: skip


def collectives(rank: int) -> dict:
    out = {}
    x = Tensor(np.arange(4.0) * (rank + 1), requires_grad=True)
    reduced = dfn.all_reduce(x)
    (reduced * (rank + 1.0)).sum().backward()  # each rank weighs its output apart
    out["all_reduce"], out["all_reduce_grad"] = reduced.numpy().copy(), x.grad.numpy().copy()
    x.grad = None
    parts = dfn.all_gather(x)
    sum(p.sum() * (r + 1.0) for r, p in enumerate(parts)).backward()
    out["all_gather"] = np.stack([p.numpy() for p in parts])
    out["all_gather_grad"] = x.grad.numpy().copy()
    pieces = [Tensor(x.numpy().reshape(2, 2)[r], requires_grad=True) for r in range(2)]
    block = dfn.reduce_scatter(Tensor(np.zeros(2)), pieces)
    (block * (rank + 1.0)).sum().backward()
    out["reduce_scatter"] = block.numpy().copy()
    out["reduce_scatter_grad"] = np.stack([p.grad.numpy() for p in pieces])
    x.grad = None
    sent = dfn.broadcast(x, 0)
    (sent * (rank + 1.0)).sum().backward()
    out["broadcast"], out["broadcast_grad"] = sent.numpy().copy(), x.grad.numpy().copy()
    return out


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (1, 2), mesh_dim_names=("dp", "tp"))["tp"]
    seen = {"held": {}, "whole": {}, "replicated": {}}
    for way in WAYS:
        x, y = batch(way)
        model = parallel(way, mesh)
        seen["held"][way] = sum(p.size for p in model.parameters())
        seen["whole"][way] = sum(p.size for p in build(way).parameters())
        seen["replicated"][way] = sum(
            p.size for p in model.parameters() if p.placements == (Replicate(),)
        )
        seen[way] = train(model, x, y)
    seen["dtensor"] = dtensor_round_trips(mesh)
    seen["collectives"] = collectives(rank)
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])

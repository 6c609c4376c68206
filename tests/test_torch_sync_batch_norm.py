"""``nn.SyncBatchNorm`` (``tricycle.nn.sync_batch_norm``): alone it is ``BatchNorm`` (and
torch's BatchNorm); two ranks, each on half of a batch, equal one process on the whole batch
and torch's ``BatchNorm2d`` on it with the same weights (outputs, running statistics, input
gradients, the weights' gradients summed over the ranks), first with two threads sharing a
stand-in World in this process, then under mpiexec with ``init_process_group``, where a
``DistributedDataParallel`` model converted by ``convert_sync_batchnorm`` takes the SGD
steps of one process on the whole batch; the conversion itself, and bad arguments refused.

Run as a script (``mpiexec -n 2 python tests/test_torch_sync_batch_norm.py OUT``) this file
is the ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys
import threading

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import by_key, ranks_findings, write_from_rank_0
from tests.test_distributed import needs_mpi
from tricycle import process_group
from tricycle.nn import sync_batch_norm
from tricycle.nn.sync_batch_norm import SyncBatchNorm
from tricycle.parallel import distributed as world_module
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

C = 3


def batch(shape=(8, C, 4, 5)):
    """An input, the upstream weights of a loss sum(y * w), and affine weights."""
    rng = np.random.default_rng(0)
    x = (rng.normal(size=shape) * 2 + 1).astype(np.float32)
    w = rng.normal(size=shape).astype(np.float32)
    gamma, beta = rng.normal(size=(2, shape[1])).astype(np.float32)
    return x, w, gamma, beta


def layer(gamma, beta, cls=SyncBatchNorm, **kwargs):
    bn = cls(C, momentum=0.3, **kwargs)
    bn.gamma.array[...], bn.beta.array[...] = gamma, beta
    return bn


def run(bn, x, w, steps: int = 2) -> dict:
    """``steps`` training calls of ``bn`` on x, each with a backward of sum(y * w); the last
    output and gradients, the running statistics."""
    for _ in range(steps):
        bn.zero_grad()
        xx = Tensor(x)
        y = bn(xx)
        (y * Tensor(w, requires_grad=False)).sum().backward()
    return {"y": y.array, "dx": xx.grad.array, "dgamma": bn.gamma.grad.array,
            "dbeta": bn.beta.grad.array, "mean": bn.running_mean.array.copy(),
            "var": bn.running_var.array.copy()}  # fmt: skip


def torch_whole(x, w, gamma, beta, steps: int = 2) -> dict:
    """torch's BatchNorm2d on the whole batch, as ``run``."""
    torch = pytest.importorskip("torch")
    bn = torch.nn.BatchNorm2d(C, momentum=0.3)
    with torch.no_grad():
        bn.weight[:], bn.bias[:] = torch.tensor(gamma), torch.tensor(beta)
    for _ in range(steps):
        bn.zero_grad()
        xt = torch.tensor(x, requires_grad=True)
        y = bn(xt)
        (y * torch.tensor(w)).sum().backward()
    return {"y": y.detach().numpy(), "dx": xt.grad.numpy(), "dgamma": bn.weight.grad.numpy(),
            "dbeta": bn.bias.grad.numpy(), "mean": bn.running_mean.numpy(),
            "var": bn.running_var.numpy()}  # fmt: skip


def assert_halves_are_the_whole(halves: list[dict], whole: dict) -> None:
    """The ranks' outputs and input gradients are the whole batch's rows, their weights'
    gradients sum to the whole batch's, their running statistics are the whole batch's."""
    for key in ("y", "dx"):
        got = np.concatenate([h[key] for h in halves])
        np.testing.assert_allclose(got, whole[key], rtol=1e-4, atol=2e-5, err_msg=key)
    for key in ("dgamma", "dbeta"):
        got = sum(h[key] for h in halves)
        np.testing.assert_allclose(got, whole[key], rtol=1e-4, atol=2e-5, err_msg=key)
    for key in ("mean", "var"):
        for h in halves:
            np.testing.assert_allclose(h[key], whole[key], rtol=1e-5, atol=1e-6, err_msg=key)


# ====================================================================== alone
def test_alone_it_is_batch_norm_and_torch_s():
    x, w, gamma, beta = batch()
    alone = run(layer(gamma, beta), x, w)
    plain = run(layer(gamma, beta, nn.BatchNorm2d), x, w)
    for key, value in plain.items():
        np.testing.assert_array_equal(alone[key], value, err_msg=key)
    assert_halves_are_the_whole([alone], torch_whole(x, w, gamma, beta))
    evaluated = layer(gamma, beta).eval()(Tensor(x))  # evaluation: the running statistics
    plain_eval = layer(gamma, beta, nn.BatchNorm2d).eval()(Tensor(x))
    np.testing.assert_array_equal(evaluated.array, plain_eval.array)


# ====================================================================== two threads
class ThreadWorld:
    """A stand-in World of two ranks for two threads of this process: ``all_reduce`` waits
    for both threads' arrays and gives each their sum."""

    world_size = 2

    def __init__(self):
        self.barrier = threading.Barrier(2, timeout=30)
        self.sent = [None, None]
        self.rank = threading.local()

    def all_reduce(self, array, mean: bool = False):
        self.sent[self.rank.value] = array.copy()
        self.barrier.wait()
        total = self.sent[0] + self.sent[1]
        self.barrier.wait()  # both read before the next all-reduce writes
        return total / 2 if mean else total


def compiled_first(x, w, gamma, beta) -> None:
    """The CPU kernels the threads will call, compiled (or loaded) in this thread first: two
    threads compiling one numba kernel at once can fail (numba's typing is not thread-safe)."""
    bn = layer(gamma, beta)
    y, _, _, _ = sync_batch_norm.sync_batch_norm(Tensor(x), bn.gamma, bn.beta, 1e-5, np.copy)
    (y * Tensor(w, requires_grad=False)).sum().backward()


def in_two_threads(work):
    """``work(rank)`` in two threads sharing a ThreadWorld registered as the process
    group's; their results in rank order."""
    world, results, errors = ThreadWorld(), [None, None], []

    def rank_of(rank):
        world.rank.value = rank
        try:
            results[rank] = work(rank)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            errors.append(error)
            world.barrier.abort()

    saved = process_group._registered["find_world"]
    process_group.use_world(lambda: world)
    try:
        threads = [threading.Thread(target=rank_of, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        process_group._registered["find_world"] = saved
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("shape", [(8, C, 4, 5), (6, C)])
def test_two_ranks_on_halves_are_one_process_on_the_whole_batch(shape):
    x, w, gamma, beta = batch(shape)
    half = shape[0] // 2
    compiled_first(x[:half], w[:half], gamma, beta)
    halves = in_two_threads(
        lambda r: run(
            layer(gamma, beta), x[r * half : (r + 1) * half], w[r * half : (r + 1) * half]
        )
    )
    whole = run(layer(gamma, beta, nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d), x, w)
    assert_halves_are_the_whole(halves, whole)
    if len(shape) == 4:
        assert_halves_are_the_whole(halves, torch_whole(x, w, gamma, beta))


def test_ranks_with_unequal_batches_and_no_affine_weights():
    x, w, _, _ = batch((7, C, 3, 3))
    cut = [slice(0, 2), slice(2, 7)]
    for rows in cut:
        compiled_first(x[rows], w[rows], np.ones(C, np.float32), np.zeros(C, np.float32))
    halves = in_two_threads(
        lambda r: run_plain(SyncBatchNorm(C, affine=False, momentum=None), x[cut[r]], w[cut[r]])
    )
    whole = run_plain(nn.BatchNorm2d(C, affine=False, momentum=None), x, w)
    for key in ("y", "dx"):
        np.testing.assert_allclose(np.concatenate([h[key] for h in halves]), whole[key],
                                   rtol=1e-4, atol=2e-5)  # fmt: skip
    for h in halves:
        np.testing.assert_allclose(h["var"], whole["var"], rtol=1e-5)


def run_plain(bn, x, w):
    xx = Tensor(x)
    y = bn(xx)
    (y * Tensor(w, requires_grad=False)).sum().backward()
    return {"y": y.array, "dx": xx.grad.array, "var": bn.running_var.array}


# ====================================================================== conversion
def test_convert_sync_batchnorm_replaces_every_batch_norm_sharing_its_tensors():
    model = nn.Sequential(nn.Conv2d(C, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten())
    model.extra = [nn.BatchNorm1d(5, eps=1e-3, affine=False)]
    model.eval()
    weight, mean = model[1].gamma, model[1].running_mean
    converted = SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and type(model[1]) is SyncBatchNorm
    assert model[1].gamma is weight and model[1].running_mean is mean and not model[1].training
    assert type(model.extra[0]) is SyncBatchNorm and model.extra[0].eps == 1e-3
    assert model.extra[0].gamma is None
    assert [type(m).__name__ for m in model.modules()].count("SyncBatchNorm") == 2
    single = nn.BatchNorm3d(2, momentum=None)
    single.num_batches_tracked = 4
    again = SyncBatchNorm.convert_sync_batchnorm(single)
    assert type(again) is SyncBatchNorm and again.momentum is None
    assert again.num_batches_tracked == 4
    assert set(again.state_dict()) == set(single.state_dict())


def test_torch_s_weights_load_into_it_and_back():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.SyncBatchNorm(C, momentum=None)
    with torch.no_grad():
        theirs.weight[:], theirs.running_var[:] = torch.tensor([0.5, 2.0, 3.0]), 4.0
    theirs.num_batches_tracked += 6
    ours = SyncBatchNorm(C, momentum=None)
    nn.from_torch(ours, theirs.state_dict())
    assert ours.num_batches_tracked == 6
    back = nn.to_torch(ours)
    assert set(back) == set(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        np.testing.assert_array_equal(back[name], value.numpy(), err_msg=name)


def test_bad_arguments_are_refused():
    dist.destroy_process_group()  # no World another test of this process left behind
    x = Tensor(np.zeros((4, 3), dtype=np.float32))
    named = SyncBatchNorm(3, process_group="workers")  # read in training, as torch's
    started = "SyncBatchNorm: process_group='workers' names a group, but no process group has"
    with pytest.raises(ValueError, match=started):
        named(x)
    dist.init_process_group("gloo")
    try:
        with pytest.raises(ValueError, match="SyncBatchNorm: group must be None .* got 'workers'"):
            named(x)
        converted = SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(3), process_group="w")
        assert converted.process_group == "w"
        named.eval()
        named(x)  # in evaluation, BatchNorm's running statistics: no group read
    finally:
        dist.destroy_process_group()
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        SyncBatchNorm(3)(Tensor(np.zeros(3, dtype=np.float32)))
    with pytest.raises(ValueError, match="expected input with 3 channels"):
        SyncBatchNorm(3)(Tensor(np.zeros((2, 4), dtype=np.float32)))
    with pytest.raises(TypeError, match="use_world: find_world"):
        process_group.use_world(3)


# ====================================================================== two ranks under MPI
class Net(nn.Module):
    def __init__(self):
        self.body = nn.Sequential(nn.Conv2d(C, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten())
        self.head = nn.Linear(4 * 2 * 3, 1)

    def forward(self, x):
        return self.head(self.body(x))


def train(model, x, y, steps: int = 3) -> dict:
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(steps):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    bn = (model if isinstance(model, Net) else model.module).body[1]
    return {"params": {n.removeprefix("module."): p.array.copy()
                       for n, p in model.named_parameters()},
            "mean": bn.running_mean.array.copy(), "var": bn.running_var.array.copy()}  # fmt: skip


@needs_mpi
def test_two_mpi_ranks_are_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    x, w, gamma, beta = batch()
    assert_halves_are_the_whole(got["layer"], torch_whole(x, w, gamma, beta))
    manual_seed(0)
    xs, ys = x, w[:, 0, 0, :1]  # (8, 3, 4, 5) images, (8, 1) targets
    whole = train(Net(), xs, ys)
    for rank in range(2):
        for name, value in whole["params"].items():
            np.testing.assert_allclose(got["ddp"][rank]["params"][name], value, rtol=1e-4,
                                       atol=1e-5, err_msg=name)  # fmt: skip
        for key in ("mean", "var"):
            np.testing.assert_allclose(got["ddp"][rank][key], whole[key], rtol=1e-4, atol=1e-6)


def ranks(out: str) -> None:
    """Both ranks' program: a SyncBatchNorm on each half, then a converted model under DDP."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x, w, gamma, beta = batch()
    rows = slice(4 * rank, 4 * rank + 4)
    seen = {"layer": run(layer(gamma, beta), x[rows], w[rows])}
    manual_seed(0)
    model = dist.DistributedDataParallel(SyncBatchNorm.convert_sync_batchnorm(Net()))
    seen["ddp"] = train(model, x[rows], w[rows, 0, 0, :1])
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])

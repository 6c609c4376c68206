"""Data parallelism (tricycle/parallel/distributed.py): the gradient hook it starts reductions
from, a world of one process, rank-sharded data, and two ranks under mpiexec compared with
one process on the same global batch."""

import contextlib
import importlib.util
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.distributed_worker import CONFIG, tokens, train
from tricycle.casting import cast
from tricycle.configs import DebugConfig
from tricycle.dataset import CausalLMDataset
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.parallel import buckets, distributed
from tricycle.parallel import threads as threads_module
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "distributed_worker.py"


# ====================================================================== the gradient hook
def test_hook_sees_the_final_gradient_of_a_tensor_used_twice():
    x = Tensor(np.array([1.0, -2.0, 3.0]))
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.array.copy()))
    (x * x + x * 3.0).sum().backward()  # a diamond: two paths into x
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 * x.array + 3)
    np.testing.assert_array_equal(seen[0], x.grad.array)


def test_hooks_fire_during_backward_as_each_gradient_finishes():
    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=(4, 3)), requires_grad=False)
    w1, w2 = Tensor(rng.normal(size=(3, 5))), Tensor(rng.normal(size=(5, 2)))
    events = []
    w1.register_post_accumulate_grad_hook(lambda t: events.append(("w1", w2.grad is None)))
    w2.register_post_accumulate_grad_hook(lambda t: events.append(("w2", w1.grad is None)))
    ((x @ w1) @ w2).sum().backward()
    # w2 is nearer the output: its gradient is final first, while w1's is still to come
    assert events == [("w2", True), ("w1", False)]


def test_hooks_fire_as_early_under_mixed_precision():
    """Each weight's 16-bit cast, computed from the weight alone, is differentiated right
    after its user, so the weight's hook fires there as in float32, not at the end of
    backward (where data parallelism would start every bucket at once)."""
    rng = np.random.default_rng(0)
    x = Tensor(rng.normal(size=(4, 3)).astype(np.float16), requires_grad=False)
    w1, w2 = (Tensor(rng.normal(size=shape).astype(np.float32)) for shape in ((3, 5), (5, 2)))
    events = []
    w1.register_post_accumulate_grad_hook(lambda t: events.append(("w1", w2.grad is None)))
    w2.register_post_accumulate_grad_hook(lambda t: events.append(("w2", w1.grad is None)))
    ((x @ cast(w1, np.float16)) @ cast(w2, np.float16)).sum().backward()
    assert events == [("w2", True), ("w1", False)]
    assert w1.grad.dtype == w2.grad.dtype == np.float32


def test_hook_on_a_retained_gradient_and_removal():
    x = Tensor(np.array([1.0, 2.0]))
    h = (x * 2.0).retain_grad()
    calls = []
    handle = h.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.array.copy()))
    (h * h).sum().backward()
    np.testing.assert_allclose(calls[0], 2 * h.array)
    handle.remove()
    y = (x * 2.0).retain_grad()
    (y * y).sum().backward()
    assert len(calls) == 1


def test_hook_sees_gradients_accumulated_over_backward_calls():
    x = Tensor(np.array([1.0, 2.0]))
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.array.copy()))
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(seen, [[2.0, 2.0], [5.0, 5.0]])


def test_hooks_are_not_pickled():
    x = Tensor(np.array([1.0, 2.0]))
    x.register_post_accumulate_grad_hook(lambda t: None)  # a lambda: unpicklable
    y = pickle.loads(pickle.dumps(x))
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(y.grad.array, [1.0, 1.0])


# ====================================================================== a world of one
def test_a_world_of_one_process():
    world = distributed.init()
    assert (world.rank, world.world_size, world.local_rank, world.is_main) == (0, 1, 0, True)
    assert distributed.init() is world
    world.barrier()
    assert world.all_reduce(2.5) == 2.5
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(world.all_reduce(values, mean=False), values)
    assert world.broadcast_object({"seed": 7}) == {"seed": 7}
    assert world.all_gather(values).shape == (1, 2, 3)
    assert world.all_gather_object("a") == ["a"]
    assert world.gather_object([1, 2]) == [[1, 2]]


def test_a_collective_that_never_completes_ends_in_a_clear_error():
    class Stuck:  # an MPI request whose peers never come
        def Test(self):
            return False

    world = distributed.World(None, timeout=0.05)
    with pytest.raises(distributed.DistributedError, match="timed out after 0.05 s waiting for x"):
        world.wait(distributed._HostRequest(Stuck()), "x")


def test_mpiexec_without_mpi4py_is_refused(monkeypatch):
    monkeypatch.setenv("PMI_SIZE", "2")

    def no_mpi4py(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(distributed.importlib, "import_module", no_mpi4py)
    with pytest.raises(distributed.DistributedError, match="one of 2 started by mpiexec"):
        distributed._import_mpi()


def tiny_gpt():
    manual_seed(0)
    return GPT(DebugConfig(**CONFIG))


def backward_on_a_batch(model, seed: int = 0):
    data = CausalLMDataset(tokens(), CONFIG["vocab_size"], 4, CONFIG["context_window"], seed)
    inputs, targets = next(data.batch())
    CrossEntropy()(targets, model(inputs)).backward()


def test_data_parallel_in_a_world_of_one_changes_no_gradient():
    plain, reduced = tiny_gpt(), tiny_gpt()
    backward_on_a_batch(plain)
    world = distributed.init()
    reducer = distributed.DataParallel(reduced, world, bucket_bytes=4096, reduce_alone=True)
    assert len(reducer.buckets) > 1
    backward_on_a_batch(reduced)
    reducer.finish()
    for (name, p), (_, q) in zip(plain.named_parameters(), reduced.named_parameters()):
        np.testing.assert_array_equal(q.grad.array, p.grad.array, err_msg=name)
    # views of the buckets, none sharing memory with another parameter's gradient
    grads = [p.grad.array for p in reduced.parameters()]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(grads) for b in grads[i + 1 :])


def test_data_parallel_over_a_list_with_frozen_parameters_reduces_the_trained_ones():
    """``model.parameters()`` lists a frozen Parameter, as torch's: DataParallel given that
    list lays out and waits for the gradients of the parameters that require grad alone (the
    frozen embedding has none: its bucket would never fill), as torch's DDP."""
    plain, reduced = tiny_gpt(), tiny_gpt()
    for model in plain, reduced:
        for p in model.token_embedding.parameters():
            p.requires_grad = False
    assert len(reduced.parameters()) == len(tiny_gpt().parameters())  # still listed
    backward_on_a_batch(plain)
    reducer = distributed.DataParallel(reduced.parameters(), distributed.init(),
                                       bucket_bytes=4096, reduce_alone=True)  # fmt: skip
    backward_on_a_batch(reduced)
    reducer.finish()
    for (name, p), (_, q) in zip(plain.named_parameters(), reduced.named_parameters()):
        if p.requires_grad:
            np.testing.assert_array_equal(q.grad.array, p.grad.array, err_msg=name)
        else:
            assert p.grad is None and q.grad is None, name


def model_reducer_and_batches(reduced: bool):
    """A tiny GPT, its DataParallel in a world of one (small buckets, reducing anyway) or
    None, and batches of 4 windows."""
    model, reducer = tiny_gpt(), None
    if reduced:
        reducer = distributed.DataParallel(model, distributed.init(), bucket_bytes=4096,
                                           reduce_alone=True)  # fmt: skip
    data = CausalLMDataset(tokens(), CONFIG["vocab_size"], 4, CONFIG["context_window"], 0)
    return model, reducer, data.batch()


def test_mixed_precision_writes_each_gradient_into_its_bucket_with_no_copy(monkeypatch):
    """Under a 16-bit policy a parameter's gradient is its cast's widened gradient: the
    widening writes it into the parameter's slice of its bucket, and the numbers are the
    plain backward's."""
    from tricycle import backprop, casting
    from tricycle.precision import Precision

    written, kept = [], []
    widen, accumulate = casting.widen, backprop.accumulate
    monkeypatch.setattr(casting, "widen", lambda g, dtype, out=None: written.append(
        out is not None) or widen(g, dtype, out))  # fmt: skip
    monkeypatch.setattr(backprop, "accumulate", lambda node, g: kept.append(
        g is node.grad_buffer) or accumulate(node, g))  # fmt: skip
    policy, grads = Precision("fp16", loss_scaling=False), []
    for reduced in (False, True):
        model, reducer, batches = model_reducer_and_batches(reduced)
        inputs, targets = next(batches)
        written.clear()
        kept.clear()
        policy.backward(CrossEntropy()(targets, policy.forward(model, inputs)))
        if reducer is not None:
            reducer.finish()
            views = {id(v) for b in reducer.buckets for v in b.views}
            assert all(id(p.grad.array) in views for p in model.parameters())
        grads.append({n: p.grad.array.copy() for n, p in model.named_parameters()})
        # every parameter's gradient, once, into its bucket (the logits' cast: a new array),
        # and kept there as it is: no copy of it, nor into it
        n = len(list(model.parameters())) if reduced else 0
        assert sum(written) == n and sum(kept) == n
    for name, g in grads[0].items():
        np.testing.assert_array_equal(grads[1][name], g, err_msg=name)


def test_mixed_precision_accumulation_into_buckets_is_the_plain_accumulation():
    """Two steps of two micro-batches under a 16-bit policy (the first inside ``no_sync``,
    the buckets planned again after the first step): the gradients of a plain backward."""
    from tricycle.precision import Precision

    policy, grads = Precision("fp16", loss_scaling=False), []
    for reduced in (False, True):
        model, reducer, batches = model_reducer_and_batches(reduced)
        for _ in range(2):
            for micro in range(2):
                inputs, targets = next(batches)
                local = reducer is not None and micro == 0
                with reducer.no_sync() if local else contextlib.nullcontext():
                    policy.backward(CrossEntropy()(targets, policy.forward(model, inputs)))
            if reducer is not None:
                reducer.finish()
            grads.append({n: p.grad.array.copy() for n, p in model.named_parameters()})
            model.zero_grad()
    for plain, reduced in zip(grads[:2], grads[2:]):
        for name, g in plain.items():
            np.testing.assert_array_equal(reduced[name], g, err_msg=name)


def test_the_first_bucket_is_small_and_buckets_follow_the_first_backward():
    plain, reduced = tiny_gpt(), tiny_gpt()
    world = distributed.init()
    reducer = distributed.DataParallel(reduced, world, bucket_bytes=4096, first_bucket_bytes=600,
                                       reduce_alone=True)  # fmt: skip
    def closed_at_its_limit(buckets, first, limit):
        """Each bucket but the last closed by the parameter that brought it to its limit."""
        for k, bucket in enumerate(buckets[:-1]):
            before = bucket.nbytes - bucket.params[-1].array.nbytes
            assert before < (first if k == 0 else limit) <= bucket.nbytes, k

    closed_at_its_limit(reducer.buckets, 600, 4096)
    finished = []
    for p in reduced.parameters():
        p.register_post_accumulate_grad_hook(lambda t: finished.append(t))
    for seed in range(3):  # the plan changes after the first step; the gradients never do
        for model in (plain, reduced):
            model.zero_grad()
            backward_on_a_batch(model, seed)
        reducer.finish()
        for (name, p), (_, q) in zip(plain.named_parameters(), reduced.named_parameters()):
            np.testing.assert_array_equal(q.grad.array, p.grad.array, err_msg=name)
        planned = [id(p) for bucket in reducer.buckets for p in bucket.params]
        assert planned == [id(p) for p in finished[: len(planned)]]  # backward's order
        finished.clear()
    closed_at_its_limit(reducer.buckets, 600, 4096)


def test_buckets_on_the_host_default_to_4_mib():
    reducer = distributed.DataParallel(tiny_gpt(), distributed.init(), reduce_alone=True)
    assert reducer.sizes == (1 << 20, 4 << 20)  # (first, the others); 25 MiB on a GPU


def test_reducing_in_float16_rounds_each_gradient_once():
    plain, reduced = tiny_gpt(), tiny_gpt()
    backward_on_a_batch(plain)
    reducer = distributed.DataParallel(reduced, distributed.init(), bucket_bytes=4096,
                                       reduce_dtype=np.float16, reduce_alone=True)  # fmt: skip
    backward_on_a_batch(reduced)
    reducer.finish()
    for (name, p), (_, q) in zip(plain.named_parameters(), reduced.named_parameters()):
        assert q.grad.dtype == np.float32
        np.testing.assert_array_equal(q.grad.array, p.grad.array.astype(np.float16), name)
    with pytest.raises(distributed.DistributedError, match="float16 or bfloat16"):
        distributed.DataParallel(reduced, distributed.init(), reduce_dtype=np.float64)


def test_gradient_as_bucket_view_needs_the_engine_for_it(monkeypatch):
    """Without an engine that accumulates into Tensor.grad_buffer, asking for gradients as
    views of the buckets is refused, and the default falls back to copies."""
    monkeypatch.setattr(buckets, "ENGINE_FILLS_GRAD_BUFFERS", False)
    message = r"needs an engine that accumulates gradients into Tensor\.grad_buffer"
    with pytest.raises(distributed.DistributedError, match=message):
        distributed.DataParallel(tiny_gpt(), distributed.init(), gradient_as_bucket_view=True)
    reducer = distributed.DataParallel(tiny_gpt(), distributed.init(), reduce_alone=True)
    assert reducer.as_view is False


def test_data_parallel_alone_copies_and_sends_nothing():
    """In a world of one the mean over the ranks is the gradient itself: no buckets, no
    hooks, the very gradient arrays that backward made."""
    plain, alone = tiny_gpt(), tiny_gpt()
    backward_on_a_batch(plain)
    reducer = distributed.DataParallel(alone, distributed.init())
    assert reducer.buckets == [] and reducer._hooks == []
    backward_on_a_batch(alone)
    before = [p.grad for p in alone.parameters()]
    reducer.finish()
    assert all(p.grad is g for p, g in zip(alone.parameters(), before))
    for (name, p), (_, q) in zip(plain.named_parameters(), alone.named_parameters()):
        np.testing.assert_array_equal(q.grad.array, p.grad.array, err_msg=name)


def test_a_removed_data_parallel_reduces_nothing():
    model = tiny_gpt()
    reducer = distributed.DataParallel(model, distributed.init(), reduce_alone=True)
    reducer.remove()
    backward_on_a_batch(model)
    assert all(not bucket.filled for bucket in reducer.buckets)  # no hook copied a gradient


def test_no_sync_accumulates_locally_and_a_second_backward_is_refused():
    plain, reduced = tiny_gpt(), tiny_gpt()
    backward_on_a_batch(plain, seed=1)
    backward_on_a_batch(plain, seed=2)
    world = distributed.init()
    reducer = distributed.DataParallel(reduced, world, bucket_bytes=4096, reduce_alone=True)
    with reducer.no_sync():
        backward_on_a_batch(reduced, seed=1)
    backward_on_a_batch(reduced, seed=2)
    reducer.finish()
    for p, q in zip(plain.parameters(), reduced.parameters()):
        np.testing.assert_array_equal(q.grad.array, p.grad.array)
    reduced.zero_grad()
    backward_on_a_batch(reduced)
    with pytest.raises(distributed.DistributedError, match="second backward pass"):
        backward_on_a_batch(reduced)


def test_zero_in_a_world_of_one_is_adamw():
    world = distributed.init()
    plain, sharded = tiny_gpt(), tiny_gpt()
    adamw = AdamW(learning_rate=1e-2, weight_decay=0.1)
    zero = ZeroRedundancyOptimiser(AdamW(learning_rate=1e-2, weight_decay=0.1),
                                               sharded, world)  # fmt: skip
    for seed in range(3):
        for model, optimiser in [(plain, adamw), (sharded, zero)]:
            optimiser.step()
            backward_on_a_batch(model, seed)
            model.update(optimiser)
    for p, q in zip(plain.parameters(), sharded.parameters()):
        np.testing.assert_array_equal(q.array, p.array)
    state, zero_state = adamw.state_dict(), zero.state_dict()
    assert state.keys() == zero_state.keys()
    for key in state:
        np.testing.assert_array_equal(zero_state[key], state[key], err_msg=key)
    assert zero.state_bytes() == sum(v.nbytes for k, v in state.items() if "/exp_avg" in k)
    zero.load_state_dict(state)
    for key, value in zero.state_dict().items():
        np.testing.assert_array_equal(value, state[key], err_msg=key)


def test_zero_rejects_mixed_dtypes():
    params = [Tensor(np.zeros(2, np.float32)), Tensor(np.zeros(2, np.float64))]
    with pytest.raises(ValueError, match="one dtype"):
        ZeroRedundancyOptimiser(AdamW(), params, distributed.init())


# ====================================================================== data
def test_the_ranks_batches_make_up_the_single_process_batch():
    ids = tokens()
    single = CausalLMDataset(ids, 32, 6, 8, seed=3).batch()
    ranks = [CausalLMDataset(ids, 32, 2, 8, seed=3, rank=r, world_size=3).batch() for r in range(3)]
    for _ in range(4):
        inputs, targets = next(single)
        parts = [next(rank) for rank in ranks]
        np.testing.assert_array_equal(np.concatenate([x for x, _ in parts]), inputs)
        np.testing.assert_array_equal(np.concatenate([y for _, y in parts]), targets)
    # every rank's generator stands where the single process's does: resumable at any size
    assert ranks[0].rng.bit_generator.state == single.rng.bit_generator.state


def test_sequential_evaluation_is_split_between_ranks():
    ids = tokens()
    single = list(CausalLMDataset(ids, 32, 6, 8).iterate_sequential(max_batches=5))
    ranks = [
        list(CausalLMDataset(ids, 32, 2, 8, rank=r, world_size=3).iterate_sequential(5))
        for r in range(3)
    ]
    assert [len(batches) for batches in ranks] == [5, 5, 5]
    for k, (inputs, targets) in enumerate(single):
        np.testing.assert_array_equal(np.concatenate([r[k][0] for r in ranks]), inputs)
        np.testing.assert_array_equal(np.concatenate([r[k][1] for r in ranks]), targets)
    # 249 windows in global batches of 15: the last has 9, rows 0-4 and 5-8 (rank 2: none)
    last = [list(CausalLMDataset(ids, 32, 5, 8, rank=r, world_size=3).iterate_sequential())
            for r in range(3)]  # fmt: skip
    assert [len(batches) for batches in last] == [17, 17, 16]
    assert sum(x.shape[0] for batches in last for x, _ in batches) == (len(ids) - 1) // 8


def test_sequential_evaluation_can_give_each_rank_whole_batches():
    """split="batches": rank r evaluates the global batches r, r + N, ...: the same windows
    as one process, in 1/N of the launches; a rank left without a batch sends a zero of the
    others' kind, so that every rank makes the same collectives."""
    ids = tokens()
    single = list(CausalLMDataset(ids, 32, 6, 8).iterate_sequential(max_batches=5))
    ranks = [list(CausalLMDataset(ids, 32, 2, 8, rank=r, world_size=3)
                  .iterate_sequential(5, split="batches")) for r in range(3)]  # fmt: skip
    assert [len(batches) for batches in ranks] == [2, 2, 1]
    for k, (inputs, targets) in enumerate(single):
        np.testing.assert_array_equal(ranks[k % 3][k // 3][0], inputs)
        np.testing.assert_array_equal(ranks[k % 3][k // 3][1], targets)

    class OtherRankSentOneBatch:  # rank 0's sums: a loss total of 7.0 over one batch
        world_size, sent = 2, []

        def all_reduce(self, value, mean=True):
            self.sent.append(value)
            return value + (7.0 if len(self.sent) == 1 else 1.0)

    from tricycle.apps.validation import evaluate

    world = OtherRankSentOneBatch()
    data = CausalLMDataset(ids, 32, 2, 8, rank=1, world_size=2).batch()
    assert evaluate(tiny_gpt(), data, n_batches=1, world=world) == 7.0
    assert world.sent == [0.0, 0.0]  # numbers, as every rank sends them


def test_random_evaluation_can_give_each_rank_whole_batches():
    """iterate_random(split="batches"): the global batches one process draws, rank r the
    r-th of every N; every rank's generator advances as one process's does."""
    ids = tokens()
    single = CausalLMDataset(ids, 32, 6, 8, seed=4).batch()
    drawn = list(single.iterate_random(5))
    ranks = [CausalLMDataset(ids, 32, 2, 8, seed=4, rank=r, world_size=3).batch() for r in range(3)]
    whole = [list(rank.iterate_random(5, split="batches")) for rank in ranks]
    assert [len(batches) for batches in whole] == [2, 2, 1]
    for k, (inputs, targets) in enumerate(drawn):
        np.testing.assert_array_equal(whole[k % 3][k // 3][0], inputs)
        np.testing.assert_array_equal(whole[k % 3][k // 3][1], targets)
    for rank in ranks:
        assert rank.rng.bit_generator.state == single.rng.bit_generator.state
    rows = CausalLMDataset(ids, 32, 2, 8, seed=4, rank=1, world_size=3).batch()
    for (inputs, _), (x, _) in zip(drawn, rows.iterate_random(5)):  # "rows": next()'s rows
        np.testing.assert_array_equal(x, inputs[2:4])


@pytest.mark.parametrize("rank, world_size", [(2, 2), (-1, 2), (0, 0)])
def test_a_bad_rank_is_refused(rank, world_size):
    with pytest.raises(ValueError, match="CausalLMDataset: (rank|world_size) must be"):
        CausalLMDataset(tokens(), 32, 2, 8, rank=rank, world_size=world_size)


# ====================================================================== two ranks
def mpiexec() -> str | None:
    """The mpiexec beside this Python (the mpich wheel's), else on the PATH."""
    local = Path(sys.executable).with_name("mpiexec")
    return str(local) if local.exists() else shutil.which("mpiexec")


needs_mpi = pytest.mark.skipif(
    mpiexec() is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpi4py and mpiexec (pip install tricycle-dl[distributed])",
)


# Open MPI's mpiexec refuses to start as root (containers, CI) unless told; MPICH ignores these
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def launch(
    scenario: str, out: Path, timeout: float = 60.0, dist_timeout: float = 600.0, ranks: int = 2,
    threads: dict | None = None,
):  # fmt: skip
    """Run the worker on ``ranks`` ranks; returns (CompletedProcess, seconds). ``threads``:
    the thread variables to set instead of one thread each (all others unset)."""
    env = dict(os.environ, **AS_ROOT)
    for name in threads_module.VARIABLES:
        env.pop(name, None)
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        TRICYCLE_DIST_TIMEOUT=str(dist_timeout),
        **(dict(OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1") if threads is None else threads),
    )
    command = [mpiexec(), "-n", str(ranks), sys.executable, str(WORKER), scenario, str(out)]
    start = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - start


def relative_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


@needs_mpi
def test_two_ranks_train_as_one_process_on_the_same_global_batch(tmp_path):
    done, _ = launch("train", tmp_path / "out.npz")
    assert done.returncode == 0, done.stderr
    got = np.load(tmp_path / "out.npz")
    assert int(got["world_size"]) == 2
    world = distributed.init()  # one process, twice the batch per step
    grads, losses, plain, _ = train(world, batch_size=8, steps=20)
    for name, grad in grads.items():
        assert relative_error(got[f"grad/{name}"], grad) <= 1e-6, name
        # each rank's share rounded to float16 for the wire: 11 bits
        assert relative_error(got[f"grad16/{name}"], grad) <= 2e-3, name
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-5)
    _, accumulated, _, _ = train(world, batch_size=4, steps=5, accumulation=2)
    np.testing.assert_allclose(got["accumulated"], accumulated, rtol=1e-5)
    _, _, params, _ = train(world, batch_size=8, steps=3)
    for name, param in params.items():
        np.testing.assert_allclose(got[f"plain/{name}"], param, rtol=1e-3, atol=1e-5)
    # ZeRO-1 takes the same steps as plain data parallelism, and its gathered state is
    # plain AdamW's
    for name in params:
        np.testing.assert_allclose(got[f"zero/{name}"], got[f"plain/{name}"], rtol=1e-6)
    state_keys = [k for k in got.files if k.startswith("plain_state/")]
    assert state_keys and len(state_keys) == len([k for k in got.files if "zero_state/" in k])
    for key in state_keys:
        slot = key[len("plain_state/") :]
        np.testing.assert_allclose(got[f"zero_state/{slot}"], got[key], rtol=1e-6, atol=1e-12)
        np.testing.assert_array_equal(got[f"reloaded/{slot}"], got[f"zero_state/{slot}"])


@needs_mpi
def test_a_hung_rank_makes_the_other_abort_within_the_timeout(tmp_path):
    done, seconds = launch("hang", tmp_path / "out", dist_timeout=2)
    assert done.returncode != 0
    assert "rank 0 of 2: timed out after 2 s waiting for an all-reduce" in done.stderr
    assert seconds < 20  # the hung rank would sleep for 60


@needs_mpi
def test_a_killed_rank_ends_the_job(tmp_path):
    done, seconds = launch("kill", tmp_path / "out", dist_timeout=2)
    assert done.returncode != 0
    assert seconds < 20


@needs_mpi
def test_an_error_on_one_rank_ends_every_rank_at_once_with_its_message(tmp_path):
    done, seconds = launch("raise", tmp_path / "out")  # the timeout would be 600 s
    assert done.returncode != 0
    assert "ValueError: a bad file on rank 1" in done.stderr  # the traceback
    assert "rank 1 of 2: ValueError: a bad file on rank 1. Ending all ranks." in done.stderr
    assert "dead or hung" not in done.stderr
    assert seconds < 20


@needs_mpi
def test_a_usage_error_every_rank_meets_is_said_once_by_rank_0(tmp_path):
    done, seconds = launch("same", tmp_path / "out")
    assert done.returncode != 0
    assert "rank 0 of 2: --flag: refused on rank 0. Ending all ranks." in done.stderr
    assert "refused on rank 1" not in done.stderr  # rank 0 ended the job first
    assert seconds < 20


@needs_mpi
def test_a_usage_error_said_to_be_every_rank_s_is_still_said_by_the_one_rank_that_meets_it(
    tmp_path,
):
    done, seconds = launch("same_on_1", tmp_path / "out")
    assert done.returncode != 0
    assert "rank 1 of 2: --flag: refused on rank 1. Ending all ranks." in done.stderr
    assert seconds < 20


@needs_mpi
def test_the_script_says_a_batch_that_does_not_split_over_the_ranks_once(tmp_path):
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1")
    command = [mpiexec(), "-n", "2", sys.executable, str(ROOT / "train_smol_gpt.py"),
               "--config", "debug", "--batch-size", "3", "--out-dir", str(tmp_path / "run"),
               "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if "does not split evenly" in line]
    assert said == [
        "tricycle.parallel.distributed: rank 0 of 2: tricycle-train: batch_size 3 does not "
        "split evenly over 2 processes: pick a multiple of the number of processes. Ending "
        "all ranks."
    ]


@needs_mpi
def test_a_finished_job_ends_within_seconds_of_its_last_line(tmp_path):
    done, _ = launch("end", tmp_path / "out")
    ended = time.time()
    assert done.returncode == 0, done.stderr
    printed = [float(line.split()[-1]) for line in done.stderr.splitlines()
               if line.startswith("last line at ")]  # fmt: skip
    assert len(printed) == 2  # both ranks
    assert ended - max(printed) < 3.0


@needs_mpi
def test_the_ranks_on_one_machine_share_its_cores_unless_the_user_chose(tmp_path):
    """Two ranks that may run on the same cores (a launcher that binds nothing, as MPICH's)
    get half of them each; ranks bound to cores of their own (Open MPI's default) get all of
    theirs."""
    done, _ = launch("threads", tmp_path / "threads.json", threads={"OMP_NUM_THREADS": "3"})
    assert done.returncode == 0, done.stderr
    ranks = json.loads((tmp_path / "threads.json").read_text())
    if any(rank["cores"] is None for rank in ranks):
        pytest.skip("this OS does not tell a process its cores")
    first, second = (set(rank["cores"]) for rank in ranks)
    shared = bool(first & second)
    for rank in ranks:
        share = str(max(1, len(rank["cores"]) // (2 if shared else 1)))
        assert rank["local_size"] == 2
        assert rank["OMP_NUM_THREADS"] == "3"  # the user's
        for name in ("TRICYCLE_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            assert rank[name] == share, name
        assert rank["blas"] and all(str(n) == share for n in rank["blas"])  # loaded already


def test_numba_s_count_is_left_once_its_threads_run(monkeypatch):
    """numba raises at its next compile if NUMBA_NUM_THREADS changes after its pool started:
    then only the other variables (the kernels' TRICYCLE_THREADS among them) are set."""
    for name in threads_module.VARIABLES:  # unset here, and as they were after the test
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    seen = []

    def limit(limits, user_api):  # this test process's own pools stay as they are
        seen.append((limits, user_api))

    monkeypatch.setattr(threads_module, "threadpool_limits", limit)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 8)
    started = type(sys)("numba.np.ufunc.parallel")
    started._is_initialized = True
    monkeypatch.setitem(sys.modules, "numba.np.ufunc.parallel", started)
    assert threads_module.share_cores(2) == 4
    assert "NUMBA_NUM_THREADS" not in os.environ
    assert os.environ["TRICYCLE_THREADS"] == os.environ["OMP_NUM_THREADS"] == "4"
    assert seen == [(4, "blas"), (4, "openmp")]


def test_a_process_alone_keeps_the_libraries_defaults(monkeypatch):
    for name in threads_module.VARIABLES:  # unset here, and as they were after the test
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    assert threads_module.share_cores(1) is None
    assert not any(name in os.environ for name in threads_module.VARIABLES)


def test_ranks_share_the_cores_they_may_all_run_on_and_keep_cores_of_their_own(monkeypatch):
    """Unbound ranks (MPICH's default) divide the machine; ranks a launcher bound to cores of
    their own (Open MPI's default) each keep theirs; an unknown affinity counts as shared."""
    all_cores, first, second = frozenset(range(8)), frozenset({0, 1}), frozenset({2, 3})
    assert threads_module.sharing(all_cores, [all_cores, all_cores]) == 2
    assert threads_module.sharing(first, [first, second]) == 1
    assert threads_module.sharing(first, [first, frozenset({1, 2})]) == 2
    assert threads_module.sharing(None, [None, None]) == 2
    for name in threads_module.VARIABLES:  # unset here, and as they were after the test
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    monkeypatch.setattr(threads_module, "threadpool_limits", lambda **_: None)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 8)
    assert threads_module.share_cores(2) == 4  # two ranks on the same eight cores
    assert os.environ["TRICYCLE_THREADS"] == "4"
    for name in threads_module.VARIABLES:  # what it set would now count as the user's
        monkeypatch.delenv(name, raising=False)  # (NUMBA_NUM_THREADS: unset once numba runs)
    assert threads_module.share_cores(2, sharers=1) == 8  # eight cores of its own
    assert os.environ["TRICYCLE_THREADS"] == "8"


@needs_mpi
def test_ctrl_c_ends_every_rank_at_once(tmp_path):
    """mpiexec passes Ctrl-C on to the ranks, busy in their collectives (MPICH's as SIGINT,
    Open MPI's as SIGTERM): each ends with the message, and the job within a few seconds."""
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1",
               PYTHONPATH=str(ROOT))  # fmt: skip
    command = [mpiexec(), "-n", "2", sys.executable, str(WORKER), "interrupt", str(tmp_path)]
    job = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        ready = 0
        for line in job.stderr:  # both ranks in their loop of collectives
            ready += line.endswith(" ready\n")
            if ready == 2:
                break
        start = time.monotonic()
        job.send_signal(signal.SIGINT)
        _, rest = job.communicate(timeout=30)
    finally:
        job.kill()
    assert time.monotonic() - start < 5
    assert job.returncode != 0
    assert re.search(r"of 2: interrupted \((Ctrl-C|SIGTERM)\)\. Ending all ranks\.", rest), rest


@needs_mpi
def test_local_ranks_on_two_simulated_machines(tmp_path):
    """4 ranks placed round robin on two machines (named by $TRICYCLE_HOST): each machine's
    ranks count 0, 1 in rank order, as a machine's GPUs would be handed out."""
    done, _ = launch("hosts", tmp_path / "hosts.json", ranks=4)
    assert done.returncode == 0, done.stderr
    ranks = json.loads((tmp_path / "hosts.json").read_text())
    layout = [(r["rank"], r["host"], r["local_rank"], r["local_size"]) for r in ranks]
    assert layout == [(0, "node0", 0, 2), (1, "node1", 0, 2), (2, "node0", 1, 2),
                      (3, "node1", 1, 2)]  # fmt: skip
    assert all(r["total"] == 4 for r in ranks)  # the collectives still span both machines


# ====================================================================== the command line
def write_corpus(path: Path) -> Path:
    """A small code-like text (as test_train's)."""
    rng = np.random.default_rng(0)
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    lines = []
    for i in range(1500):
        a, b = rng.choice(names, 2)
        op = rng.choice(["+", "-", "*", "//"])
        lines.append(f"def {a}_{b}_{i % 97}(x):\n    return {a}(x) {op} {b}(x, {i % 13})\n")
    path.write_text("".join(lines))
    return path


def train_cli(processes: int, out_dir: Path, *extra: str, tmp_path: Path):
    """``mpiexec -n processes python train_smol_gpt.py`` (plain python for 1); returns its
    stderr and its metrics."""
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1",
               TRICYCLE_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, str(ROOT / "train_smol_gpt.py"), "--out-dir", str(out_dir),
               "--no-progress", "--sample-tokens", "0", *extra]  # fmt: skip
    if processes > 1:
        command = [mpiexec(), "-n", str(processes), *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (out_dir / "metrics.jsonl").read_text().splitlines()
    return done.stderr, [json.loads(line) for line in lines]


@needs_mpi
def test_a_usage_error_on_rank_0_ends_every_rank_at_once(tmp_path):
    """The README's `mpiexec -n 2 python train_smol_gpt.py` in an --out-dir that holds a
    run: rank 0 alone sees it; rank 1 must not wait for rank 0 until the timeout."""
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    (out_dir / "metrics.jsonl").write_text('{"step": 1}\n')
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1",
               TRICYCLE_DIST_TIMEOUT="600")  # fmt: skip
    command = [mpiexec(), "-n", "2", sys.executable, str(ROOT / "train_smol_gpt.py"),
               "--config", "debug", "--out-dir", str(out_dir), "--no-progress"]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0
    assert f"rank 0 of 2: --out-dir {out_dir} already holds a run" in done.stderr
    assert time.monotonic() - start < 20
    assert (out_dir / "metrics.jsonl").read_text() == '{"step": 1}\n'  # untouched


@needs_mpi
def test_the_script_on_two_ranks_is_the_single_process_run_and_resumes_alone(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt")
    run = ["--config", "debug", "--dataset", str(corpus), "--steps", "6",
           "--eval-interval", "3", "--eval-steps", "3"]  # fmt: skip
    _, single = train_cli(1, tmp_path / "one", *run, tmp_path=tmp_path)
    log, first = train_cli(2, tmp_path / "two", *run, "--zero", "--stop-after", "3",
                           tmp_path=tmp_path)  # fmt: skip
    assert "world size 2" in log.splitlines()[0]
    assert json.loads((tmp_path / "two" / "config.json").read_text())["world_size"] == 2
    assert [r["step"] for r in first] == [1, 2, 3]  # rank 0 alone wrote the metrics
    # the checkpoint of 2 ranks with ZeRO-1 resumes in one process, without it
    _, resumed = train_cli(1, tmp_path / "two", "--resume", "--dataset", str(corpus),
                           tmp_path=tmp_path)  # fmt: skip
    assert [r["step"] for r in resumed] == [r["step"] for r in single]
    for key in ("loss", "val_loss"):
        got = [r[key] for r in resumed if r[key] is not None]
        want = [r[key] for r in single if r[key] is not None]
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=key)

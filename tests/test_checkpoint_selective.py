"""Selective activation checkpointing (tricycle.utils.checkpoint_selective): the gradients
equal those without checkpointing, exactly, whatever is saved; a saved op's computation runs
once (counted), a recomputed one twice; the same numbers as torch's
create_selective_checkpoint_contexts with the same list of torch's ops; what the policy sees;
kept outputs let go once handed over; a second backward refused as torch's; the hooks exist
only while a region is open, in its thread only; and the errors."""

import contextlib
import functools
import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle import backend, binary, dispatch
from tricycle.blocks import GPT2TransformerBlock
from tricycle.tensor import Tensor
from tricycle.utils.checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    checkpoint,
    create_selective_checkpoint_contexts,
)
from tricycle.utils.checkpoint_selective import op_names

RNG = np.random.default_rng(5)
PLAIN = {"choose": dispatch.choose, "apply": binary._apply}
SAVE, RECOMPUTE = CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_RECOMPUTE


def sac(policy):
    """checkpoint's context_fn for ``policy``."""
    return functools.partial(create_selective_checkpoint_contexts, policy)


def leaf(array, xp=np) -> Tensor:
    return Tensor(xp.asarray(array, dtype=np.float64), requires_grad=True)


def mlp(dropout: float = 0.25) -> nn.Sequential:
    tricycle.manual_seed(2)
    return nn.Sequential(
        nn.Linear(4, 8), nn.GELU(), nn.Dropout(dropout), nn.Linear(8, 4), nn.LayerNorm(4),
    ).to(dtype=np.float64)  # fmt: skip


def gpt_blocks() -> nn.Sequential:
    tricycle.manual_seed(1)
    return nn.Sequential(
        *[GPT2TransformerBlock(8, 2, 6, dropout_prob=0.2).to(dtype=np.float64) for _ in "ab"]
    )


def gradients(model, x: np.ndarray, context_fn=None) -> list:
    """[loss, dx, *dparameters] of ``model`` with each top-level layer checkpointed with
    ``context_fn`` (None: no checkpoint)."""
    x = leaf(x, backend.array_module(x))
    y = x
    for layer in model:
        y = layer(y) if context_fn is None else checkpoint(layer, y, context_fn=context_fn)
    loss = (y * y).sum() + y.sum()
    loss.backward()
    return [loss.array, x.grad.array] + [p.grad.array for p in model.parameters()]


def assert_equal(a: list, b: list) -> None:
    assert len(a) == len(b)
    for i, (p, q) in enumerate(zip(a, b)):
        np.testing.assert_array_equal(backend.to_host_array(p), backend.to_host_array(q), err_msg=i)


def all_save(ctx, op, *args, **kwargs):
    return CheckpointPolicy.PREFER_SAVE


def all_recompute(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_RECOMPUTE


POLICIES = {
    "matmul": ["matmul"],
    "norms and dropout": ["layer_norm", "dropout", "step_seed"],
    "torch's spellings": ["aten.mm.default", "aten.addmm.default", "aten._softmax.default"],
    "functions": [F.linear, F.layer_norm, tricycle.einsum],
    "everything": all_save,
    "nothing": all_recompute,
    "bools": lambda ctx, op, *args, **kwargs: op in ("attention", "bias_gelu", "add"),
    "offload (torch's eager: recomputed)": lambda *a, **k: CheckpointPolicy.MUST_CPU_OFFLOAD,
}


# ------------------------------------------------------------------ the same numbers
# Exactly: under dispatch.references() (plain numpy, the same numbers on every call). With the
# CPU kernels on, a kernel's first calls in a process may round differently from its later
# ones (two runs without checkpointing differ there too), so those runs are compared closely.
@pytest.mark.parametrize("references", [True, False], ids=["references", "kernels"])
@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
@pytest.mark.parametrize("make, shape", [(mlp, (5, 4)), (gpt_blocks, (2, 6, 8))])
def test_gradients_equal_those_without_checkpointing(policy, make, shape, references):
    x = RNG.normal(size=shape)
    with dispatch.references() if references else contextlib.nullcontext():
        expected = gradients(make(), x)
        got = gradients(make(), x, sac(policy))
    if references:
        assert_equal(got, expected)
    else:
        for i, (a, b) in enumerate(zip(got, expected)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=i)


@settings(max_examples=12, deadline=None)
@given(
    saved=st.sets(st.sampled_from(["matmul", "add", "mul", "layer_norm", "gelu", "dropout",
                                   "softmax", "tanh"])),  # fmt: skip
    rows=st.integers(1, 4),
    width=st.integers(1, 5),
)
def test_any_saved_set_gives_the_plain_gradients_exactly(saved, rows, width):
    w = leaf(RNG.normal(size=(width, width)))
    gamma = leaf(RNG.normal(size=(width,)))
    x_value = RNG.normal(size=(rows, width))

    def f(x):  # every kind of op the hooks see, and some they do not (tanh, sum)
        h = F.layer_norm(x @ w, (width,), weight=gamma) * 2.0
        h = F.softmax(tricycle.einsum("ij,jk->ik", F.gelu(h), w), dim=-1) + h.tanh()
        return F.dropout(h, 0.3) * x

    results = []
    for context_fn in (None, sac(sorted(saved))):
        tricycle.manual_seed(4)
        x = leaf(x_value)
        w.grad = gamma.grad = None
        with dispatch.references():
            y = f(x) if context_fn is None else checkpoint(f, x, context_fn=context_fn)
            (y * y).sum().backward()
        results.append([y.array, x.grad.array, w.grad.array, gamma.grad.array])
    assert_equal(*results)


def test_against_torchs_selective_checkpoint_with_torchs_op_list():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    from torch.utils.checkpoint import create_selective_checkpoint_contexts as torch_sac

    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 4),
                                 torch.nn.LayerNorm(4)).double()  # fmt: skip
    ours = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4), nn.LayerNorm(4))
    ours = ours.to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    ops = [torch.ops.aten.mm.default, torch.ops.aten.addmm.default]  # the same list, both
    x_value = RNG.normal(size=(5, 4))

    x = torch.tensor(x_value, requires_grad=True)
    y = torch_checkpoint(theirs, x, use_reentrant=False,
                         context_fn=functools.partial(torch_sac, ops))  # fmt: skip
    ((y * y).sum() + y.sum()).backward()

    got = gradients(nn.Sequential(ours), x_value, sac(ops))
    np.testing.assert_allclose(got[0], ((y * y).sum() + y.sum()).item(), rtol=1e-13)
    np.testing.assert_allclose(got[1], x.grad.numpy(), rtol=1e-11, atol=1e-13)
    for p, (name, q) in zip(ours.parameters(), theirs.named_parameters(), strict=True):
        want = q.grad.numpy() if p.shape == q.shape else q.grad.numpy().T  # Linear: (in, out)
        np.testing.assert_allclose(p.grad.array, want, rtol=1e-11, atol=1e-13, err_msg=name)


def test_a_second_backward_is_refused_as_torchs_and_allowed_without_saves():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    from torch.utils.checkpoint import create_selective_checkpoint_contexts as torch_sac

    def theirs(x, w):
        return torch.sigmoid(torch.matmul(torch.matmul(x, w), w)) * w

    def ours(x, w):
        return ((x @ w) @ w).sigmoid() * w

    x_value, w_value = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    for save in (True, False):
        saved = ["matmul"] if save else []
        tx, tw = (torch.tensor(v, requires_grad=True) for v in (x_value, w_value))
        x, w = leaf(x_value), leaf(w_value)
        ops = [torch.ops.aten.mm.default] if save else []
        ty = torch_checkpoint(theirs, tx, tw, use_reentrant=False,
                              context_fn=functools.partial(torch_sac, ops))  # fmt: skip
        y = checkpoint(ours, x, w, context_fn=sac(saved))
        ty.sum().backward(retain_graph=True)
        y.sum().backward(retain_graph=True)
        np.testing.assert_allclose(w.grad.array, tw.grad.numpy(), rtol=1e-12)
        if save:
            with pytest.raises(RuntimeError, match="backward an extra time"):
                ty.sum().backward()
            with pytest.raises(CheckpointError, match="backward an extra time"):
                y.sum().backward()
        else:
            ty.sum().backward()
            y.sum().backward()
            np.testing.assert_allclose(w.grad.array, tw.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ what is not recomputed
def counted_cube(calls: list, inner=None):
    """x**3 as tricycle makes a fused op (asking the dispatch for its kernel), appending to
    ``calls`` each time its computation runs; ``inner``: another such op its computation
    runs (a kernel calling a kernel)."""

    def cube_forward(xp, x):
        calls.append("cube")
        if inner is not None:
            inner(Tensor(x))
        return x * x * x

    def cube(x: Tensor) -> Tensor:
        forward = dispatch.choose("test_cube", cube_forward, x.array)
        y = forward(x.xp, x.array)
        return x.new(y, args=(x,), back_fns=(lambda dy: 3 * x.array * x.array * dy,),
                     name="test_cube")  # fmt: skip

    return cube


@pytest.mark.parametrize(
    "policy, runs",
    [(None, 6), (["matmul"], 6), (["test_cube"], 3), (all_save, 3), (all_recompute, 6)],
)
def test_a_saved_ops_computation_runs_once(policy, runs):
    calls = []
    cube = counted_cube(calls)
    w = leaf(RNG.normal(size=(3, 3)))

    def f(x):
        return cube(cube(cube(x) @ w) * 0.5)

    x = leaf(RNG.normal(size=(2, 3)))
    context_fn = None if policy is None else sac(policy)
    y = checkpoint(f, x) if context_fn is None else checkpoint(f, x, context_fn=context_fn)
    assert len(calls) == 3
    y.sum().backward()
    assert len(calls) == runs
    expected = leaf(x.array)
    f(expected).sum().backward()
    np.testing.assert_array_equal(x.grad.array, expected.grad.array)


@pytest.mark.parametrize("saved, runs", [(["matmul"], 2), ([], 4)])
def test_a_saved_matmul_is_not_computed_again(monkeypatch, saved, runs):
    """numpy's matmul, counted while the function runs (forward and recomputation), for ``@``
    (a binary op) and an einsum run as one product (dispatched, references only)."""
    calls, inside = [], [False]
    matmul = np.matmul

    def counted(*args, **kwargs):
        if inside[0]:
            calls.append(1)
        return matmul(*args, **kwargs)

    monkeypatch.setattr(np, "matmul", counted)
    w = leaf(RNG.normal(size=(3, 3)))

    def f(x):
        inside[0] = True
        y = tricycle.einsum("ij,jk->ik", (x @ w).tanh(), w).tanh()
        inside[0] = False
        return y

    with dispatch.references():
        x = leaf(RNG.normal(size=(2, 3)))
        checkpoint(f, x, context_fn=sac(saved)).sum().backward()
    assert len(calls) == runs


def test_an_op_inside_an_ops_computation_is_the_outer_ops():
    inner_calls, calls = [], []
    inner = counted_cube(inner_calls)
    outer = counted_cube(calls, inner=inner)
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(op)
        return op == "test_cube"

    x = leaf(RNG.normal(size=(2, 3)))
    checkpoint(lambda x: outer(x).tanh(), x, context_fn=sac(policy)).sum().backward()
    assert seen == ["test_cube"] and len(calls) == len(inner_calls) == 1
    np.testing.assert_allclose(x.grad.array, 3 * x.array**2 * (1 - np.tanh(x.array**3) ** 2))


def test_an_lstm_whose_recurrence_runs_its_cells_saved_whole():
    tricycle.manual_seed(3)
    lstm = nn.LSTM(3, 4).to(dtype=np.float64)
    x_value = RNG.normal(size=(5, 2, 3))
    results = []
    for context_fn in (None, sac(all_save)):
        x = leaf(x_value)
        for p in lstm.parameters():
            p.grad = None
        y = lstm(x)[0] if context_fn is None else checkpoint(lambda x: lstm(x)[0], x,
                                                             context_fn=context_fn)  # fmt: skip
        (y * y).sum().backward()
        results.append([x.grad.array] + [p.grad.array for p in lstm.parameters()])
    assert_equal(*results)


def test_outputs_holding_tensors_are_recomputed():
    calls = []

    def tensor_forward(x):  # a kernel returning a Tensor (precision's cast_output does)
        calls.append(1)
        return x * 2.0

    def f(x):
        return dispatch.choose("test_tensor", tensor_forward, x.array)(x).tanh()

    x = leaf(RNG.normal(size=(2, 3)))
    checkpoint(f, x, context_fn=sac(["test_tensor"])).sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(x.grad.array, 2 * (1 - np.tanh(2 * x.array) ** 2))


def test_kept_outputs_live_until_handed_over_then_go():
    outputs = {}
    cube = counted_cube([])

    def policy(ctx, op, *args, **kwargs):
        outputs.setdefault(op, weakref.ref(ctx.op_output))
        return op in ("test_cube", "matmul")

    pair = create_selective_checkpoint_contexts(policy)  # held here until the end
    w = leaf(RNG.normal(size=(3, 3)))
    x = leaf(RNG.normal(size=(2, 3)))
    y = checkpoint(lambda x: (cube(x) @ w + x).tanh(), x, context_fn=lambda: pair)
    gc.collect()
    assert outputs["test_cube"]() is not None and outputs["matmul"]() is not None  # kept
    assert outputs["add"]() is None  # recomputed: not kept
    y.sum().backward()
    gc.collect()
    assert outputs["test_cube"]() is None and outputs["matmul"]() is None  # the pair holds none


# ------------------------------------------------------------------ what the policy sees
def test_the_policy_sees_each_forward_op_once_with_its_output():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        assert isinstance(ctx, SelectiveCheckpointContext) and ctx.is_recompute is False
        seen.append((op, ctx.op_output))
        return RECOMPUTE

    block = gpt_blocks()[0]
    y = checkpoint(block, leaf(RNG.normal(size=(2, 6, 8))), context_fn=sac(policy))
    names = [op for op, _ in seen]
    assert set(names) == {"layer_norm", "matmul", "add", "step_seed", "attention", "dropout",
                          "bias_gelu"} and names.count("matmul") == 4  # fmt: skip
    y.sum().backward()
    assert len(seen) == len(names)  # not asked again in the recomputation
    ln = seen[0][1]  # layer_norm's forward: (y, mean, rstd)
    assert isinstance(ln, tuple) and len(ln) == 3 and ln[0].shape == (2, 6, 8)
    np.testing.assert_array_equal(seen[-1][1], y.array)  # the last add is the block's output


def test_op_names_of_a_lists_entries():
    torch = pytest.importorskip("torch")
    assert op_names("matmul") == ("matmul",)
    assert op_names("aten.mm.default") == op_names(torch.ops.aten.mm.default) == ("matmul",)
    assert op_names(torch.ops.aten.addmm) == op_names("torch.ops.aten.bmm.default") == ("matmul",)
    assert op_names(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default) == (
        "scaled_dot_product_attention", "attention",
    )  # fmt: skip
    assert op_names(torch.ops.aten.add.Tensor) == ("add",)
    assert op_names(torch.ops.aten.native_layer_norm.default) == op_names(F.layer_norm)
    assert op_names(tricycle.einsum) == op_names(F.linear) == op_names(tricycle.matmul)
    assert op_names(F.softmax) == op_names(torch.ops.aten._softmax.default) == ("softmax",)
    assert op_names("<") == ("<",)


# ------------------------------------------------------------------ the hooks
def test_the_hooks_exist_only_while_a_region_is_open():
    during = []

    def f(x):
        during.append((dispatch.choose, binary._apply))
        return (x @ x).tanh()

    assert (dispatch.choose, binary._apply) == (PLAIN["choose"], PLAIN["apply"])
    x = leaf(RNG.normal(size=(3, 3)))
    y = checkpoint(f, x, context_fn=sac(["matmul"]))
    assert (dispatch.choose, binary._apply) == (PLAIN["choose"], PLAIN["apply"])
    y.sum().backward()
    assert (dispatch.choose, binary._apply) == (PLAIN["choose"], PLAIN["apply"])
    assert len(during) == 2 and all(d[0] is not PLAIN["choose"] for d in during)

    def broken(x):
        raise ZeroDivisionError("inside")

    with pytest.raises(ZeroDivisionError):
        checkpoint(broken, x, context_fn=sac(["matmul"]))
    assert (dispatch.choose, binary._apply) == (PLAIN["choose"], PLAIN["apply"])


def test_another_threads_ops_are_not_seen():
    seen, other = [], {}
    a = leaf(RNG.normal(size=(3, 3)))

    def work():  # while the region is open in the main thread
        other["y"] = (a @ a + a).array

    def f(x):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        return x * x

    def policy(ctx, op, *args, **kwargs):
        seen.append(op)
        return SAVE

    checkpoint(f, leaf(RNG.normal(size=(3, 3))), context_fn=sac(policy)).sum().backward()
    assert seen == ["mul"]
    np.testing.assert_array_equal(other["y"], a.array @ a.array + a.array)


# ------------------------------------------------------------------ errors
def test_errors():
    with pytest.raises(TypeError, match="function or a list of ops"):
        create_selective_checkpoint_contexts(("matmul",))
    with pytest.raises(ValueError, match="expected an op in the list"):
        create_selective_checkpoint_contexts(["matmul", 3])
    with pytest.raises(TypeError, match="allow_cache_entry_mutation"):
        create_selective_checkpoint_contexts(["matmul"], allow_cache_entry_mutation="yes")
    x = leaf(RNG.normal(size=(2, 2)))
    with pytest.raises(TypeError, match="returned 'yes' for op 'matmul'"):
        checkpoint(lambda x: x @ x, x, context_fn=sac(lambda ctx, op, *a, **k: "yes"))
    with pytest.raises(ValueError, match="use_reentrant=False"):
        checkpoint(lambda x: x @ x, x, use_reentrant=True, context_fn=sac(["matmul"]))
    runs = []

    def changing(x):  # one more product in the recomputation than in the forward
        runs.append(1)
        for _ in runs:
            x = x @ x
        return x

    y = checkpoint(changing, x, context_fn=sac(["matmul"]), determinism_check="none")
    with pytest.raises(CheckpointError, match="ran op 'matmul' 2 time"):
        y.sum().backward()


# ------------------------------------------------------------------ on a GPU
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("policy", [["matmul", "attention"], all_save, all_recompute])
def test_on_a_gpu_the_gradients_equal_those_without_checkpointing(policy):
    cp = backend.cupy()
    x = cp.asarray(RNG.normal(size=(2, 6, 8)))
    expected = gradients(gpt_blocks().to_gpu(0), x)
    got = gradients(gpt_blocks().to_gpu(0), x, sac(policy))
    for i, (a, b) in enumerate(zip(got, expected)):  # a GPU kernel may sum in any order
        np.testing.assert_allclose(cp.asnumpy(a), cp.asnumpy(b), rtol=1e-12, atol=1e-14,
                                   err_msg=i)  # fmt: skip
    calls = []
    cube = counted_cube(calls)
    y = checkpoint(lambda x: cube(cube(x)), leaf(x, cp), context_fn=sac(["test_cube"]))
    y.sum().backward()
    assert len(calls) == 2

"""tricycle.utils.checkpoint as torch.utils.checkpoint: an MLP stack and a GPT block stack
with and without checkpointing give the same loss and gradients (inputs and every parameter,
float64, dropout on: the same masks), against torch's checkpoint where the numbers can match
(no dropout), against finite differences; the activations are not kept (nothing of the
function's insides is reachable or alive); closures, several outputs, keywords,
checkpoint_sequential and the errors."""

import copy
import gc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle
import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle import autograd
from tricycle.blocks import GPT2TransformerBlock
from tricycle.tensor import Tensor
from tricycle.utils.checkpoint import checkpoint, checkpoint_sequential

RNG = np.random.default_rng(3)
X = RNG.normal(size=(5, 4))
VARIANTS = [False, True]  # use_reentrant


def mlp_stack(dropout: float = 0.25, seed: int = 0) -> nn.Sequential:
    """Three blocks of Linear, Tanh, Dropout, LayerNorm, in float64."""
    tricycle.manual_seed(seed)
    blocks = [
        nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(dropout), nn.Linear(8, 4),
                      nn.LayerNorm(4))
        for _ in range(3)
    ]  # fmt: skip
    return nn.Sequential(*blocks).to(dtype=np.float64)


def leaf(array) -> Tensor:
    return Tensor(np.array(array, dtype=np.float64), requires_grad=True)


def loss_of(y: Tensor) -> Tensor:
    return (y * y).sum() + y.sum()


def assert_same(loss_a, loss_b, a: list, b: list, rtol=1e-13) -> None:
    """Equal losses and gradients (Tensors with .grad, in order)."""
    np.testing.assert_allclose(float(loss_a), float(loss_b), rtol=rtol)
    assert len(a) == len(b)
    for i, (p, q) in enumerate(zip(a, b)):
        assert p.grad is not None and q.grad is not None, i
        np.testing.assert_allclose(p.grad.array, q.grad.array, rtol=rtol, atol=1e-14, err_msg=i)


def gradients_of(model, x: Tensor, checkpointed, **options):
    """loss and [x, *parameters] after backward, each block checkpointed or not."""
    y = x
    for block in model:
        y = checkpoint(block, y, **options) if checkpointed else block(y)
    loss = loss_of(y)
    loss.backward()
    return loss, [x, *model.parameters()]


# ------------------------------------------------------------------ same numbers
@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_an_mlp_stack_with_dropout_gives_the_same_loss_and_gradients(use_reentrant):
    plain = mlp_stack()
    ours = copy.deepcopy(plain)  # the same weights and the same dropout generators
    loss, grads = gradients_of(plain, leaf(X), False)
    loss_c, grads_c = gradients_of(ours, leaf(X), True, use_reentrant=use_reentrant)
    assert_same(loss, loss_c, grads, grads_c)


def test_without_preserved_random_state_the_masks_differ():
    plain = mlp_stack(dropout=0.5)
    ours = copy.deepcopy(plain)
    _, grads = gradients_of(plain, leaf(X), False)
    _, grads_c = gradients_of(ours, leaf(X), True, preserve_rng_state=False)
    assert not np.allclose(grads[0].grad.array, grads_c[0].grad.array)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_a_gpt_block_stack_with_dropout_as_without_checkpointing(use_reentrant):
    tricycle.manual_seed(1)
    blocks = [GPT2TransformerBlock(8, 2, 6, dropout_prob=0.2).to(dtype=np.float64) for _ in "ab"]
    x = RNG.normal(size=(2, 6, 8))
    plain, ours = nn.Sequential(*blocks), copy.deepcopy(nn.Sequential(*blocks))
    loss, grads = gradients_of(plain, leaf(x), False)
    loss_c, grads_c = gradients_of(ours, leaf(x), True, use_reentrant=use_reentrant)
    assert_same(loss, loss_c, grads, grads_c, rtol=1e-12)


def test_f_dropout_from_tricycles_generator_in_a_lambda():
    w = leaf(RNG.normal(size=(4, 4)))

    def f(x):
        return F.dropout((x @ w).tanh(), 0.5) @ w  # its seed: tricycle's generator

    results = []
    for checkpointed in (False, True):
        tricycle.manual_seed(7)
        x, w.grad = leaf(X), None
        y = checkpoint(f, x) if checkpointed else f(x)
        F.dropout(y, 0.5)  # a draw after the checkpoint, before backward
        loss = loss_of(y)
        loss.backward()
        results.append((loss, [x, w], [x.grad.array, w.grad.array]))
    (loss, _, a), (loss_c, _, b) = results
    np.testing.assert_allclose(float(loss), float(loss_c), rtol=1e-13)
    for g, h in zip(a, b):
        np.testing.assert_allclose(g, h, rtol=1e-13)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_against_torchs_checkpoint(use_reentrant):
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint

    ours = mlp_stack(dropout=0.0)
    theirs = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Dropout(0.0),
                              torch.nn.Linear(8, 4), torch.nn.LayerNorm(4))
          for _ in range(3)]
    ).double()  # fmt: skip
    nn.from_torch(ours, theirs.state_dict())
    loss, grads = gradients_of(ours, leaf(X), True, use_reentrant=use_reentrant)
    x = torch.tensor(X, requires_grad=True)
    y = x
    for block in theirs:
        y = torch_checkpoint(block, y, use_reentrant=use_reentrant)
    reference = (y * y).sum() + y.sum()
    reference.backward()
    np.testing.assert_allclose(float(loss), reference.item(), rtol=1e-12)
    np.testing.assert_allclose(grads[0].grad.array, x.grad.numpy(), rtol=1e-11, atol=1e-13)
    for p, (name, q) in zip(ours.parameters(), theirs.named_parameters(), strict=True):
        got = p.grad.array if p.shape == q.shape else p.grad.array.T  # Linear: transposed
        np.testing.assert_allclose(got, q.grad.numpy(), rtol=1e-11, atol=1e-13, err_msg=name)


@given(rows=st.integers(1, 4), width=st.integers(1, 5))
def test_gradients_against_finite_differences(rows, width):
    rng = np.random.default_rng(rows * 10 + width)
    w = leaf(rng.normal(size=(width, width)))
    assert tricycle.gradcheck(lambda x: checkpoint(lambda t: (t @ w).tanh() * t, x), leaf(
        rng.normal(size=(rows, width))))  # fmt: skip


# ------------------------------------------------------------------ nothing kept
def reachable(output: Tensor) -> list:
    """The tensors the graph of ``output`` holds, itself included."""
    seen, todo = {}, [output]
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            todo.extend(node.args or ())
    return list(seen.values())


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_the_graph_holds_nothing_of_the_functions_insides(use_reentrant):
    block = mlp_stack()[0]
    inside = []

    def f(x):
        h = block[0](x)
        inside.append(weakref.ref(h))
        return block[4](block[3](block[2](block[1](h))))

    x = leaf(X)
    y = checkpoint(f, x, use_reentrant=use_reentrant)
    gc.collect()
    assert inside[0]() is None  # the first Linear's output is gone
    held = reachable(y)
    expected = {id(y), id(x)} | (
        {id(p) for p in block.parameters()} if not use_reentrant else set()
    )
    assert {id(t) for t in held} == expected
    plain = f(x)
    assert inside[1]() is not None and len(reachable(plain)) > len(held)
    loss_of(y).backward()
    assert x.grad is not None and all(p.grad is not None for p in block.parameters())


def test_the_function_runs_again_in_backward_only():
    calls = []
    w = leaf(RNG.normal(size=(4, 4)))

    def f(x):
        calls.append(1)
        return (x @ w).tanh()

    y = checkpoint(f, leaf(X))
    assert len(calls) == 1
    loss_of(y).backward()
    assert len(calls) == 2
    with autograd.no_grad():
        assert not checkpoint(f, leaf(X)).requires_grad and len(calls) == 3


# ------------------------------------------------------------------ what the function reads
def test_a_closed_over_tensor_and_a_value_of_parameters_alone():
    """h, made before (a non-leaf), and w * 2 + w, made inside from w alone, beside w itself:
    each gradient reaches w once, and autograd.grad sees h's."""
    w = leaf(RNG.normal(size=(4, 4)))
    a = leaf(RNG.normal(size=(5, 4)))

    def f(x):
        return ((x @ (w * 2.0 + w)).tanh() * h) @ w

    results = []
    for checkpointed in (False, True):
        w.grad = a.grad = None
        h = (a * 3.0).sin()  # (5, 4), computed from a before the checkpoint
        x = leaf(X)
        y = checkpoint(f, x) if checkpointed else f(x)
        loss = loss_of(y) + h.sum()
        dh, dx = autograd.grad(loss, [h, x], retain_graph=True)
        loss.backward()
        results.append([dh.array, dx.array, x.grad.array, w.grad.array, a.grad.array])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_several_outputs_keywords_and_values_beside_them():
    w = leaf(RNG.normal(size=(4, 4)))

    def f(x, scale, *, shift):
        y = (x @ w).tanh()
        return y * scale + shift, "label", y.sum(axis=0)

    results, shifts = [], RNG.normal(size=(4,))
    for checkpointed in (False, True):
        w.grad = None
        x, shift = leaf(X), leaf(shifts)
        out = checkpoint(f, x, 3.0, shift=shift) if checkpointed else f(x, 3.0, shift=shift)
        assert out[1] == "label"
        (loss_of(out[0]) + (out[2] ** 3).sum()).backward()
        results.append([x.grad.array, shift.grad.array, w.grad.array])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_an_input_given_twice_and_one_that_needs_no_gradient():
    w = leaf(RNG.normal(size=(4, 4)))
    x, c = leaf(X), Tensor(X * 2.0, requires_grad=False)
    y = checkpoint(lambda a, b, k: (a @ w) * b + k, x, x, c)
    loss_of(y).backward()
    expected = 2 * ((X @ w.array) * X + 2 * X) + 1
    dx = (expected * X) @ w.array.T + expected * (X @ w.array)
    np.testing.assert_allclose(x.grad.array, dx, rtol=1e-12)
    assert c.grad is None


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpoint_sequential_as_without(use_reentrant):
    plain = mlp_stack()
    ours = copy.deepcopy(plain)
    layers = [layer for block in ours for layer in block]  # 15 layers
    loss, grads = gradients_of(plain, leaf(X), False)
    x = leaf(X)
    y = checkpoint_sequential(layers, 4, x, use_reentrant=use_reentrant)
    nodes = [t for t in reachable(y) if t.name == "_Recompute"]
    assert len(nodes) == 3  # the last segment (layers 9 to 14) is not checkpointed
    loss_c = loss_of(y)
    loss_c.backward()
    assert_same(loss, loss_c, grads, [x, *ours.parameters()])


def test_checkpoint_sequential_against_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint_sequential as torch_sequential

    ours = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(dtype=np.float64)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    theirs = theirs.double()
    nn.from_torch(ours, theirs.state_dict())
    x, t = leaf(X), torch.tensor(X, requires_grad=True)
    loss_of(checkpoint_sequential(ours, 2, x)).backward()
    y = torch_sequential(theirs, 2, t, use_reentrant=False)
    ((y * y).sum() + y.sum()).backward()
    np.testing.assert_allclose(x.grad.array, t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours[0].bias.grad.array, theirs[0].bias.grad.numpy(), rtol=1e-12)


# ------------------------------------------------------------------ errors
def test_errors():
    w = leaf(RNG.normal(size=(4, 4)))
    x = leaf(X)
    with pytest.raises(TypeError, match="checkpoint: function must be callable"):
        checkpoint(3, x)
    with pytest.raises(TypeError, match="use_reentrant"):
        checkpoint(lambda t: t, x, use_reentrant=None)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t, x, determinism_check="strict")
    with pytest.raises(ValueError, match=r"keyword arguments \['shift'\] with use_reentrant"):
        checkpoint(lambda t, shift: t + shift, x, use_reentrant=True, shift=1.0)
    with pytest.raises(TypeError, match="checkpoint: the function returned list"):
        checkpoint(lambda t: [t * 2.0], x)
    with pytest.warns(UserWarning, match="none of the inputs requires grad"):
        y = checkpoint(lambda t: t @ w, Tensor(X, requires_grad=False), use_reentrant=True)
    assert not y.requires_grad

    sizes = iter([4, 3])  # a function whose graph changes between forward and backward
    y = checkpoint(lambda t: (t @ w)[:, : next(sizes)], x)
    with pytest.raises(RuntimeError, match="recomputation of <lambda> in backward differs"):
        y.sum().backward()


def test_checkpoint_sequential_errors():
    layers = [nn.Tanh(), nn.Tanh()]
    x = leaf(X)
    with pytest.raises(TypeError, match="checkpoint_sequential: functions must be"):
        checkpoint_sequential(nn.Tanh(), 1, x)
    with pytest.raises(TypeError, match=r"functions\[1\] must be callable"):
        checkpoint_sequential([nn.Tanh(), 2], 1, x)
    with pytest.raises(ValueError, match="segments must be an integer >= 1"):
        checkpoint_sequential(layers, 0, x)
    with pytest.raises(ValueError, match="3 segments of 2 function"):
        checkpoint_sequential(layers, 3, x)

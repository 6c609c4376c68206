"""torch.nn.utils.prune on tricycle against torch: the masks of every method (l1 and ln with
torch's choice of entries and channels, on data without ties; the random ones by their counts
and shapes), the names torch gives (``weight_orig``, ``weight_mask``: ``named_parameters``,
``named_buffers`` and the ``state_dict`` through ``nn.to_torch``/``nn.from_torch``), forward
and backward of pruned Linear and Conv2d layers (the gradient reaches ``weight_orig`` through
the mask; after an optimiser step the pre-hook computes the pruned weight anew), iterative
pruning through ``PruningContainer``, ``global_unstructured`` over several layers, ``remove``,
copies, and the errors. torch's layout of a Linear's weight is the transpose of tricycle's:
the masks and a structured ``dim`` are torch's.

Then PyTorch's pruning tutorial (pytorch/tutorials, intermediate_source/pruning_tutorial.py),
its code cell by cell with ``torch`` replaced by ``tricycle``: run under torch, then under
tricycle with torch's initial weights (and torch's random mask where the tutorial prunes at
random), every printed value compared (tensors by value, names as torch's, hooks by class).
"""

# ruff: noqa: E501, W291, W293

import copy
import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
import tricycle.nn as nn
import tricycle.nn.utils.prune as prune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


def twins(kind: str):
    """(torch layer, tricycle layer, input) in float64, with torch's weights."""
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    if kind == "linear":
        t, m, x = torch.nn.Linear(6, 4), nn.Linear(6, 4), rng.standard_normal((3, 6))
    else:
        t, m = torch.nn.Conv2d(2, 4, 3, padding=1), nn.Conv2d(2, 4, 3, padding=1)
        x = rng.standard_normal((2, 2, 5, 5))
    t = t.double()
    m.double()
    nn.from_torch(m, t.state_dict())
    return t, m, x


def state(m) -> dict:
    return {k: np.asarray(v) for k, v in nn.to_torch(m).items()}


def same_state(t, m):
    """The same names and values as torch's state_dict (the order is the walk's: a layer's
    attributes as they came, where torch's lists its parameters before its buffers)."""
    ours = state(m)
    assert sorted(ours) == sorted(t.state_dict())
    for key, value in t.state_dict().items():
        np.testing.assert_allclose(ours[key], value.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_masks_names_forward_backward_as_torch(kind):
    t, m, x = twins(kind)
    tprune.l1_unstructured(t, name="weight", amount=0.3)
    prune.l1_unstructured(m, name="weight", amount=0.3)
    tprune.l1_unstructured(t, name="bias", amount=1)
    prune.l1_unstructured(m, name="bias", amount=1)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert sorted(state(m)) == sorted(t.state_dict())
    np.testing.assert_array_equal(m.weight_mask.numpy(), t.weight_mask.numpy())
    np.testing.assert_array_equal(m.bias_mask.numpy(), t.bias_mask.numpy())
    weights = m.weights.numpy().T if kind == "linear" else m.weights.numpy()
    np.testing.assert_allclose(weights, t.weight.detach().numpy(), rtol=1e-12)
    assert prune.is_pruned(m) and not prune.is_pruned(nn.Linear(2, 2))
    xt, xm = torch.tensor(x, requires_grad=True), tricycle.tensor(x, requires_grad=True)
    r = np.random.default_rng(2).standard_normal(t(xt).shape)
    opt_t = torch.optim.SGD(t.parameters(), lr=0.5)
    opt_m = tricycle.optim.SGD(m.parameters(), lr=0.5)
    for _ in range(2):  # the second forward: the pre-hook's weight after the step
        yt, ym = t(xt), m(xm)
        np.testing.assert_allclose(ym.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
        (yt * torch.tensor(r)).sum().backward()
        (ym * tricycle.tensor(r)).sum().backward()
        for name in ("weight_orig", "bias_orig"):  # torch's layout: zero where masked
            grad = getattr(m, name).grad.numpy()
            np.testing.assert_allclose(grad, getattr(t, name).grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
        opt_t.step(), opt_m.step(), opt_t.zero_grad(), opt_m.zero_grad()
        xt.grad, xm.grad = None, None
    same_state(t, m)


def test_iterative_pruning_container_and_remove():
    t, m, x = twins("conv")
    for p in (tprune, prune):
        layer = t if p is tprune else m
        p.l1_unstructured(layer, "weight", amount=20)
        p.ln_structured(layer, "weight", amount=0.5, n=2, dim=0)  # 2 of the 4 out-channels
        p.ln_structured(layer, "weight", amount=1, n=1, dim=1)  # then 1 in-channel of 2
        p.l1_unstructured(layer, "weight", amount=0.25)  # of the entries left
    same_state(t, m)
    hook = next(h for h in m._forward_pre_hooks.values() if h._tensor_name == "weight")
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 4
    assert [type(h).__name__ for h in hook] == [
        "L1Unstructured",
        "LnStructured",
        "LnStructured",
        "L1Unstructured",
    ]
    orig = m.weight_orig
    tprune.remove(t, "weight")
    prune.remove(m, "weight")
    assert m.weights is orig and type(m) is nn.Conv2d and not prune.is_pruned(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weights"] and not list(
        m.named_buffers()
    )
    np.testing.assert_allclose(m.weights.numpy(), t.weight.detach().numpy(), rtol=1e-12)
    xm = tricycle.tensor(x)
    np.testing.assert_allclose(m(xm).numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(m, "weight")


def test_linear_structured_dim_is_torchs_and_state_dict_round_trip():
    t, m, x = twins("linear")
    for dim, n in ((0, 2), (1, float("inf")), (-1, 1)):
        tprune.ln_structured(t, "weight", amount=1, n=n, dim=dim)
        prune.ln_structured(m, "weight", amount=1, n=n, dim=dim)
        same_state(t, m)
    assert m.weight_orig.shape == (4, 6) and m.weights.shape == (6, 4)  # torch's; tricycle's
    fresh = nn.Linear(6, 4).double()
    prune.identity(fresh, "weight")  # the pruning's form, all ones
    nn.from_torch(fresh, t.state_dict())
    fresh(tricycle.tensor(x))  # the pre-hook computes the loaded pruned weight
    np.testing.assert_allclose(
        fresh(tricycle.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-12
    )
    scores = np.arange(24.0).reshape(4, 6)  # torch's layout: rank the rows by these
    tprune.l1_unstructured(t, "weight", amount=3, importance_scores=torch.tensor(scores))
    prune.l1_unstructured(m, "weight", amount=3, importance_scores=scores)
    same_state(t, m)


def test_global_unstructured_and_custom_mask():
    pairs = [twins("conv")[:2], twins("linear")[:2]]
    (tc, mc), (tl, ml) = pairs
    tprune.l1_unstructured(tl, "weight", amount=5)  # one already pruned: its mask is kept
    prune.l1_unstructured(ml, "weight", amount=5)
    tprune.global_unstructured(
        [(tc, "weight"), (tl, "weight"), (tl, "bias")],
        pruning_method=tprune.L1Unstructured,
        amount=0.4,
    )
    prune.global_unstructured(
        [(mc, "weight"), (ml, "weight"), (ml, "bias")],
        pruning_method=prune.L1Unstructured,
        amount=0.4,
    )
    same_state(tc, mc)
    same_state(tl, ml)
    mask = (np.arange(4) % 2).astype(np.float64)
    tprune.custom_from_mask(tc, "bias", torch.tensor(mask))
    prune.custom_from_mask(mc, "bias", mask)
    np.testing.assert_array_equal(mc.bias_mask.numpy(), tc.bias_mask.numpy())
    np.testing.assert_array_equal(mc.bias.numpy(), tc.bias.detach().numpy())
    t = tricycle.tensor([3.0, -1.0, 2.0, 0.5])
    np.testing.assert_array_equal(
        prune.L1Unstructured(amount=2).prune(t).numpy(), [3.0, 0.0, 2.0, 0.0]
    )


def test_random_methods_counts_and_seed():
    m = nn.Linear(10, 6)
    tricycle.manual_seed(0)
    prune.random_unstructured(m, "weight", amount=0.25)
    assert int((m.weight_mask.numpy() == 0).sum()) == 15
    first = m.weight_mask.numpy().copy()
    again = nn.Linear(10, 6)
    tricycle.manual_seed(0)
    prune.random_unstructured(again, "weight", amount=0.25)
    np.testing.assert_array_equal(again.weight_mask.numpy(), first)
    prune.random_structured(m, "weight", amount=2, dim=0)  # 2 of 6 output rows (torch's dim 0)
    rows = (m.weight_mask.numpy() == 0).all(axis=1)
    assert rows.sum() == 2 and np.array_equal(m.weight_mask.numpy()[~rows], first[~rows])
    assert np.array_equal((m.weights.numpy() == 0).all(axis=0), rows)  # tricycle's axis 1


def test_copies_and_pickle_keep_the_pruning():
    _, m, x = twins("linear")
    prune.l1_unstructured(m, "weight", amount=0.5)
    y = m(tricycle.tensor(x)).numpy()
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        np.testing.assert_allclose(other(tricycle.tensor(x)).numpy(), y, rtol=1e-12)
        assert other.weights is not m.weights
        assert [n for n, _ in other.named_parameters()] == ["bias", "weight_orig"]
        prune.remove(other, "weight")
        assert type(other) is nn.Linear


@settings(max_examples=15, deadline=None)
@given(
    rows=st.integers(2, 5),
    cols=st.integers(2, 5),
    fraction=st.floats(0, 1),
    n=st.sampled_from([1, 2, 3]),
    dim=st.sampled_from([0, 1]),
    seed=st.integers(0, 99),
)
def test_l1_and_ln_masks_as_torch_random_shapes(rows, cols, fraction, n, dim, seed):
    w = np.random.default_rng(seed).standard_normal((rows, cols))  # no ties
    for method, kwargs in (
        (prune.L1Unstructured, {"amount": fraction}),
        (prune.LnStructured, {"amount": fraction, "n": n, "dim": dim}),
    ):
        theirs = getattr(tprune, method.__name__)(**kwargs).compute_mask(
            torch.tensor(w), torch.ones(rows, cols, dtype=torch.float64)
        )
        ours = method(**kwargs).compute_mask(
            tricycle.tensor(w), tricycle.ones((rows, cols), dtype=np.float64)
        )
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_bad_input_errors_leave_the_layer_as_it_was():
    m = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=r"amount=7 is more than the 6 entries"):
        prune.l1_unstructured(m, "weight", amount=7)
    assert [n for n, _ in m.named_parameters()] == ["weights", "bias"] and type(m) is nn.Linear
    with pytest.raises(ValueError, match=r"amount.*non-negative int"):
        prune.l1_unstructured(m, "weight", amount=-1)
    with pytest.raises(ValueError, match=r"amount.*float in \[0, 1\]"):
        prune.random_unstructured(m, "weight", amount=1.5)
    with pytest.raises(TypeError, match="amount"):
        prune.l1_unstructured(m, "weight", amount="half")
    with pytest.raises(ValueError, match=r"no parameter or buffer named 'kernel'.*'weights'"):
        prune.l1_unstructured(m, "kernel", amount=1)
    with pytest.raises(ValueError, match=r"2 or more axes.*\(2,\)"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(ValueError, match="dim"):
        prune.ln_structured(m, "weight", amount=1, n=2, dim=2)
    with pytest.raises(ValueError, match=r"importance_scores has shape \(3, 2\).*\(2, 3\)"):
        prune.l1_unstructured(m, "weight", amount=1, importance_scores=np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"mask has shape \(3, 2\).*\(2, 3\)"):
        prune.custom_from_mask(m, "weight", mask=np.ones((3, 2)))
    with pytest.raises(TypeError, match="must be unstructured"):
        prune.global_unstructured([(m, "weight")], pruning_method=prune.RandomStructured, amount=1)
    assert not prune.is_pruned(m) and type(m) is nn.Linear
    prune.l1_unstructured(m, "weight", amount=1)
    with pytest.raises(AttributeError, match="is pruned"):
        m.weights = tricycle.zeros((3, 2))
    with pytest.raises(ValueError, match="computed by pruning"):
        nn.utils.parametrize.register_parametrization(m, "weight", nn.Identity())


# ====================================================================== the tutorial
CELLS = [
    r"""
import torch
from torch import nn
import torch.nn.utils.prune as prune
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 3x3 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

model = LeNet().to(device=device)
""",
    r"""
module = model.conv1
print(list(module.named_parameters()))
""",
    r"""
print(list(module.named_buffers()))
""",
    r"""
prune.random_unstructured(module, name="weight", amount=0.3) 
""",
    r"""
print(list(module.named_parameters()))
""",
    r"""
print(list(module.named_buffers()))
""",
    r"""
print(module.weight)  # port: tricycle's name for torch's weight (documented)
""",
    r"""
print(module._forward_pre_hooks)
""",
    r"""
prune.l1_unstructured(module, name="bias", amount=3)
""",
    r"""
print(list(module.named_parameters()))
""",
    r"""
print(list(module.named_buffers()))
""",
    r"""
print(module.bias)
""",
    r"""
print(module._forward_pre_hooks)
""",
    r"""
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)

# As we can verify, this will zero out all the connections corresponding to 
# 50% (3 out of 6) of the channels, while preserving the action of the 
# previous mask.
print(module.weight)  # port: tricycle's name for torch's weight (documented)
""",
    r"""
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":  # select out the correct hook
        break

print(list(hook))  # pruning history in the container 
""",
    r"""
print(model.state_dict().keys())
""",
    r"""
print(list(module.named_parameters()))
""",
    r"""
print(list(module.named_buffers()))
""",
    r"""
print(module.weight)  # port: tricycle's name for torch's weight (documented)
""",
    r"""
prune.remove(module, 'weight')
print(list(module.named_parameters()))
""",
    r"""
print(list(module.named_buffers()))
""",
    r"""
new_model = LeNet()
""",
    r"""
for name, module in new_model.named_modules():
    # prune 20% of connections in all 2D-conv layers 
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name='weight', amount=0.2)
    # prune 40% of connections in all linear layers 
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name='weight', amount=0.4)

print(dict(new_model.named_buffers()).keys())  # to verify that all masks exist
""",
    r"""
model = LeNet()
""",
    r"""

parameters_to_prune = (
    (model.conv1, 'weight'),
    (model.conv2, 'weight'),
    (model.fc1, 'weight'),
    (model.fc2, 'weight'),
    (model.fc3, 'weight'),
)

prune.global_unstructured(
    parameters_to_prune,
    pruning_method=prune.L1Unstructured,
    amount=0.2,
)
""",
    r"""
print(
    "Sparsity in conv1.weight: {:.2f}%".format(
        100. * float(torch.sum(model.conv1.weight == 0))  # port: tricycle's name for torch's weight (documented)
        / float(model.conv1.weight.nelement())  # port: tricycle's name for torch's weight (documented)
    )
)
print(
    "Sparsity in conv2.weight: {:.2f}%".format(
        100. * float(torch.sum(model.conv2.weight == 0))  # port: tricycle's name for torch's weight (documented)
        / float(model.conv2.weight.nelement())  # port: tricycle's name for torch's weight (documented)
    )
)
print(
    "Sparsity in fc1.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc1.weight == 0))  # port: tricycle's name for torch's weight (documented)
        / float(model.fc1.weight.nelement())  # port: tricycle's name for torch's weight (documented)
    )
)
print(
    "Sparsity in fc2.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc2.weight == 0))  # port: tricycle's name for torch's weight (documented)
        / float(model.fc2.weight.nelement())  # port: tricycle's name for torch's weight (documented)
    )
)
print(
    "Sparsity in fc3.weight: {:.2f}%".format(
        100. * float(torch.sum(model.fc3.weight == 0))  # port: tricycle's name for torch's weight (documented)
        / float(model.fc3.weight.nelement())  # port: tricycle's name for torch's weight (documented)
    )
)
print(
    "Global sparsity: {:.2f}%".format(
        100. * float(
            torch.sum(model.conv1.weight == 0)  # port: tricycle's name for torch's weight (documented)
            + torch.sum(model.conv2.weight == 0)  # port: tricycle's name for torch's weight (documented)
            + torch.sum(model.fc1.weight == 0)  # port: tricycle's name for torch's weight (documented)
            + torch.sum(model.fc2.weight == 0)  # port: tricycle's name for torch's weight (documented)
            + torch.sum(model.fc3.weight == 0)  # port: tricycle's name for torch's weight (documented)
        )
        / float(
            model.conv1.weight.nelement()  # port: tricycle's name for torch's weight (documented)
            + model.conv2.weight.nelement()  # port: tricycle's name for torch's weight (documented)
            + model.fc1.weight.nelement()  # port: tricycle's name for torch's weight (documented)
            + model.fc2.weight.nelement()  # port: tricycle's name for torch's weight (documented)
            + model.fc3.weight.nelement()  # port: tricycle's name for torch's weight (documented)
        )
    )
)
""",
    r'''
class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor
    """
    PRUNING_TYPE = 'unstructured'

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.flatten()[::2] = 0
        return mask
''',
    r'''
def foobar_unstructured(module, name):
    """Prunes tensor corresponding to parameter called `name` in `module`
    by removing every other entry in the tensors.
    Modifies module in place (and also return the modified module) 
    by:
    1) adding a named buffer called `name+'_mask'` corresponding to the 
    binary mask applied to the parameter `name` by the pruning method.
    The parameter `name` is replaced by its pruned version, while the 
    original (unpruned) parameter is stored in a new parameter named 
    `name+'_orig'`.

    Args:
        module (nn.Module): module containing the tensor to prune
        name (string): parameter name within `module` on which pruning
                will act.

    Returns:
        module (nn.Module): modified (i.e. pruned) version of the input
            module
    
    Examples:
        >>> m = nn.Linear(3, 4)
        >>> foobar_unstructured(m, name='bias')
    """
    FooBarPruningMethod.apply(module, name)
    return module
''',
    r"""
model = LeNet()
foobar_unstructured(model.fc3, name='bias')

print(model.fc3.bias_mask)
""",
]


def tricycle_text(cell: str) -> str:
    """The cell under tricycle: ``torch`` -> ``tricycle``, and on each ``# port:`` line torch's
    ``weight`` attribute -> tricycle's ``weights``."""
    out = []
    for line in cell.replace("torch", "tricycle").splitlines():
        if "# port:" in line:
            code, _, why = line.partition("  # port:")
            line = re.sub(r"\.weight\b", ".weights", code) + "  # port:" + why
        out.append(line)
    return "\n".join(out)


def plain(value):
    """A printed object as values to compare: tensors as arrays, torch's names (tricycle's
    ``weights`` is torch's ``weight``), pruning methods (hooks) by class."""
    if isinstance(value, (torch.Tensor, tricycle.Tensor)):
        array = value.detach().numpy() if isinstance(value, torch.Tensor) else value.numpy()
        return ("tensor", np.asarray(array, dtype=np.float64))
    if isinstance(value, (prune.BasePruningMethod, tprune.BasePruningMethod)):
        return type(value).__name__
    if isinstance(value, str):
        return value.replace("weights", "weight")
    if isinstance(value, dict):  # the hooks: their ids differ
        return [plain(v) for v in value.values()]
    if type(value).__name__ in ("odict_keys", "dict_keys"):  # state_dict/buffer names
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def same(a, b, where: str):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        assert isinstance(b, tuple) and b[0] == "tensor", where
        np.testing.assert_allclose(b[1], a[1], rtol=1e-6, atol=1e-7, err_msg=where)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: {a} != {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def run_cells(cells, sync=None) -> list:
    """Each cell in one namespace whose ``print`` records its arguments; ``sync(i, space)``
    after cell i."""
    printed, space = [], {"__name__": "__main__"}
    space["print"] = lambda *args: printed.append((len(cells_done), [plain(a) for a in args]))
    cells_done = []
    for i, cell in enumerate(cells):
        exec(compile(cell, f"pruning_tutorial_cell{i}", "exec"), space)
        cells_done.append(i)
        if sync is not None:
            sync(i, space)
    return printed, space


def test_pruning_tutorial_runs_as_torchs(monkeypatch):
    for lib in torch, tricycle:  # the tutorial's device: the CPU under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    states = {}

    def keep(i, space):  # torch's weights and masks after the cells that draw them
        made = re.search(r"^(\w+) = LeNet\(\)", CELLS[i], re.MULTILINE)
        if made or "random_" in CELLS[i]:
            name = made.group(1) if made else "model"
            states[i] = (name, {k: v.detach().clone() for k, v in space[name].state_dict().items()})

    def load(i, space):  # torch's start (names are torch's), then the pre-hooks' weights
        if i in states:
            name, state_dict = states[i]
            model = space[name]
            nn.from_torch(model, state_dict)
            for layer in model.layers():
                for hook in layer._forward_pre_hooks.values():
                    hook(layer, ())

    torch.manual_seed(0)
    expected, torch_space = run_cells(CELLS, keep)
    got, space = run_cells([tricycle_text(c) for c in CELLS], load)
    assert [i for i, _ in got] == [i for i, _ in expected]
    for (i, a), (_, b) in zip(expected, got):
        same(a, b, f"print after cell {i}")
    assert len(expected) == 26
    # the tutorial's claims, in numbers: 30% of conv1's 54 weights at random, then half of its
    # 6 output channels by their L2 norm; the global 20%; every other entry of fc3's bias
    hook_counts = [p for i, p in got if i == 7]
    assert hook_counts == [[["RandomUnstructured"]]]
    new_model, torch_new = space["new_model"], torch_space["new_model"]
    x = np.random.default_rng(0).standard_normal((2, 1, 28, 28)).astype(np.float32)
    xt = torch.tensor(x)
    yt, ym = torch_new(xt), new_model(tricycle.tensor(x))
    np.testing.assert_allclose(ym.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    yt.sum().backward()
    ym.sum().backward()
    for name in ("conv1", "fc1"):
        theirs, ours = (
            getattr(torch_new, name).weight_orig.grad,
            getattr(new_model, name).weight_orig.grad,
        )
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(space["model"].fc3.bias_mask.numpy(), np.arange(10) % 2)


@pytest.mark.parametrize("size", [(4, 4), (4, 3)])
def test_an_optimizer_made_before_pruning_steps_as_torchs(size):
    """Pruning lays a Linear's (in, out) Parameter out as torch's (out, in), the same object:
    Adam's moments of it, made before, are laid out with it (``tricycle.parameter.laid_out_anew``),
    so a square layer's state is not silently applied transposed."""
    import torch.nn.utils.prune  # noqa: F401, PLC0415

    torch.manual_seed(0)
    theirs, ours = torch.nn.Linear(*size), nn.Linear(*size)
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    x = np.random.default_rng(0).normal(size=(3, size[0])).astype(np.float32)
    outputs = []
    for lib, model, pruning in (tricycle, ours, prune), (torch, theirs, torch.nn.utils.prune):
        optimizer = lib.optim.Adam(model.parameters(), lr=0.1)
        for step in range(4):
            if step == 1:
                pruning.l1_unstructured(model, "weight", amount=0.5)
            if step == 3:
                pruning.remove(model, "weight")
            optimizer.zero_grad()
            (model(lib.tensor(x)) ** 2).sum().backward()
            optimizer.step()
        outputs.append(model(lib.tensor(x)).detach().numpy())
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-4, atol=1e-4)

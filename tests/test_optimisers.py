"""Optimisers against torch.optim (one step and several), in-place updates, the AdamW decay
filter, checkpoints, and clipping by global norm."""

import numpy as np
import pytest

from tricycle import backend
from tricycle.activation import ReLU
from tricycle.layers import Dense, Embedding, Layer, Sequential
from tricycle.optimisers import (
    SGD,
    Adam,
    AdamW,
    StochasticGradientDescent,
    _adam_update,
    clip_factor,
    clip_grad_norm,
    decay_all_matrices,
    decay_matrices,
    grad_norm,
)
from tricycle.tensor import Tensor, to_tensor


class TinyModel(Layer):
    """token_embedding -> Dense -> ReLU -> Dense: 2-D, 1-D and embedding parameters."""

    def __init__(self):
        self.token_embedding = Embedding(6, 4, initialiser=lambda s: np.random.normal(size=s))
        self.hidden = Dense(4, 5)
        self.relu = ReLU()
        self.out = Dense(5, 3)
        for dense in (self.hidden, self.out):
            dense.bias.array[:] = np.random.normal(size=dense.bias.shape)

    def forward(self, ids):
        return self.out(self.relu(self.hidden(self.token_embedding(ids))))


IDS = np.array([[0, 1, 2], [3, 4, 5], [5, 5, 1]])


def torch_twin(model):
    """torch leaves with the model's values, and the same forward pass."""
    torch = pytest.importorskip("torch")
    params = {
        name: torch.tensor(backend.to_host_array(p.array), requires_grad=True)
        for name, p in model.named_parameters()
    }

    def forward(ids):
        h = params["token_embedding.weights"][torch.tensor(ids)]
        h = torch.relu(h @ params["hidden.weights"] + params["hidden.bias"])
        return h @ params["out.weights"] + params["out.bias"]

    return params, forward


def train_both(xp, make_ours, make_torch, steps, torch_groups=None):
    torch = pytest.importorskip("torch")
    np.random.seed(0)
    model = TinyModel()
    params, forward = torch_twin(model)
    groups = torch_groups(params) if torch_groups else list(params.values())
    theirs = make_torch(torch, groups)
    ours = make_ours()
    if xp is not np:
        model.to_gpu()
    ids = Tensor(xp.asarray(IDS), requires_grad=False)
    for _ in range(steps):
        ours.step()
        out = model(ids)
        (out * out).mean().backward()
        model.update(ours)
        theirs.zero_grad()
        ref = forward(IDS)
        (ref * ref).mean().backward()
        theirs.step()
    for name, p in model.named_parameters():
        np.testing.assert_allclose(
            backend.to_host_array(p.array),
            params[name].detach().numpy(),
            rtol=2e-5,
            atol=2e-6,
            err_msg=name,
        )


CASES = {
    "sgd": (lambda: SGD(0.1), lambda t, p: t.optim.SGD(p, 0.1)),
    "sgd-momentum-decay": (
        lambda: SGD(0.05, weight_decay=0.1, momentum=0.9),
        lambda t, p: t.optim.SGD(p, 0.05, weight_decay=0.1, momentum=0.9),
    ),
    "sgd-nesterov": (
        lambda: SGD(0.05, momentum=0.8, nesterov=True),
        lambda t, p: t.optim.SGD(p, 0.05, momentum=0.8, nesterov=True),
    ),
    "adam": (lambda: Adam(0.01), lambda t, p: t.optim.Adam(p, 0.01)),
    "adam-l2": (
        lambda: Adam(0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
        lambda t, p: t.optim.Adam(p, 0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    ),
    "adamw-decay-all": (
        lambda: AdamW(0.01, weight_decay=0.5, decay_filter=lambda name, p: True),
        lambda t, p: t.optim.AdamW(p, 0.01, weight_decay=0.5),
    ),
}


@pytest.mark.parametrize("steps", [1, 5])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch(xp, case, steps):
    make_ours, make_torch = CASES[case]
    train_both(xp, make_ours, make_torch, steps)


@pytest.mark.usefixtures("kernel_or_reference")
@pytest.mark.parametrize("steps", [1, 5])
def test_adamw_decays_only_matrices_that_are_not_embeddings(xp, steps):
    def groups(params):
        decayed = [params["hidden.weights"], params["out.weights"]]
        rest = [p for p in params.values() if all(p is not d for d in decayed)]
        return [{"params": decayed}, {"params": rest, "weight_decay": 0.0}]

    train_both(
        xp,
        lambda: AdamW(0.02, betas=(0.9, 0.95), weight_decay=0.3),
        lambda t, p: t.optim.AdamW(p, 0.02, betas=(0.9, 0.95), weight_decay=0.3),
        steps,
        torch_groups=groups,
    )


@pytest.mark.usefixtures("kernel_or_reference")
def test_adamw_with_nanogpt_filter_decays_embeddings_too(xp):
    def groups(params):
        decayed = [params["token_embedding.weights"], params["hidden.weights"],
                   params["out.weights"]]  # fmt: skip
        rest = [p for p in params.values() if all(p is not d for d in decayed)]
        return [{"params": decayed}, {"params": rest, "weight_decay": 0.0}]

    train_both(
        xp,
        lambda: AdamW(0.02, weight_decay=0.3, decay_filter=decay_all_matrices),
        lambda t, p: t.optim.AdamW(p, 0.02, weight_decay=0.3),
        3,
        torch_groups=groups,
    )


def test_default_decay_filter():
    assert decay_matrices("blocks.0.dense.weights", Tensor(np.ones((2, 2))))
    assert not decay_matrices("blocks.0.dense.bias", Tensor(np.ones(2)))
    assert not decay_matrices("position_embedding.weights", Tensor(np.ones((2, 2))))


def test_updates_are_in_place_and_skip_parameters_without_grads():
    model = Sequential(Dense(2, 2), Dense(2, 1))
    arrays = [p.array for p in model.parameters()]
    before = [a.copy() for a in arrays]
    model[0](to_tensor(np.ones(2))).sum().backward()  # only the first layer gets grads
    model.update(AdamW(0.1))
    assert all(p.array is a for p, a in zip(model.parameters(), arrays))
    assert not np.array_equal(arrays[0], before[0])
    np.testing.assert_array_equal(arrays[2], before[2])
    np.testing.assert_array_equal(arrays[3], before[3])


def test_adam_updates_non_contiguous_parameters_in_place():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = Tensor(base.T)  # a transposed view: not C-contiguous
    array = w.array
    w.grad = Tensor(np.ones((4, 3), dtype=np.float32))
    AdamW(0.1, weight_decay=0.0).update([("w", w)])
    assert w.array is array and np.shares_memory(array, base)
    np.testing.assert_allclose(base, np.arange(12).reshape(3, 4) - 0.1, rtol=1e-6)


def test_update_accepts_pairs_tensors_and_layers():
    weights = Tensor(np.ones(3, dtype=np.float32))
    weights.grad = Tensor(np.ones(3, dtype=np.float32))
    StochasticGradientDescent(0.5).update([weights])
    StochasticGradientDescent(0.25).update([("w", weights)])
    np.testing.assert_allclose(weights.array, 0.25)
    layer = Dense(1, 1, bias=False)
    layer.weights.grad = Tensor(np.ones((1, 1), dtype=np.float32))
    before = layer.weights.array.copy()
    SGD(1.0).update(layer)
    np.testing.assert_allclose(layer.weights.array, before - 1)


def test_first_update_without_step_is_torch_step_one():
    """Bias correction counts updates per parameter, so forgetting step() is harmless."""
    torch = pytest.importorskip("torch")
    w = Tensor(np.array([1.0, -2.0], dtype=np.float32))
    w.grad = Tensor(np.array([0.3, 0.1], dtype=np.float32))
    Adam(0.1).update([w])
    wt = torch.tensor([1.0, -2.0], requires_grad=True)
    wt.grad = torch.tensor([0.3, 0.1])
    torch.optim.Adam([wt], 0.1).step()
    np.testing.assert_allclose(w.array, wt.detach().numpy(), rtol=1e-6)


def test_learning_rate_is_settable_between_updates():
    w = Tensor(np.zeros(1, dtype=np.float32))
    optimiser = SGD(1.0)
    for lr in (0.5, 0.25):
        w.grad = Tensor(np.ones(1, dtype=np.float32))
        optimiser.learning_rate = lr
        optimiser.update([("w", w)])
    np.testing.assert_allclose(w.array, -0.75)
    assert optimiser.step().step().step_count == 2


def test_state_dict_resumes_training_exactly():
    np.random.seed(1)
    model = TinyModel()
    copy = TinyModel()
    copy.load_state_dict(model.state_dict())
    ids = to_tensor(IDS, dtype=int)

    def train(model, optimiser, steps):
        for _ in range(steps):
            optimiser.step()
            (model(ids) ** 2).mean().backward()
            model.update(optimiser)

    optimiser = AdamW(0.01, weight_decay=0.1)
    train(model, optimiser, 4)
    first = AdamW(0.01, weight_decay=0.1)
    train(copy, first, 2)
    state = first.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    assert "state/hidden.weights/exp_avg" in state and int(state["step_count"]) == 2
    resumed = AdamW(0.01, weight_decay=0.1)
    resumed.load_state_dict(state)
    train(copy, resumed, 2)
    for (name, p), q in zip(model.named_parameters(), copy.parameters()):
        np.testing.assert_array_equal(p.array, q.array, err_msg=name)


def test_load_state_dict_needs_a_step_count():
    with pytest.raises(ValueError, match="step_count"):
        Adam().load_state_dict({})


@pytest.mark.parametrize("make", [lambda: AdamW(1e-3), lambda: SGD(0.1, momentum=0.9)])
def test_a_state_of_another_model_is_refused_naming_the_parameter(make):
    """Loaded moments of another shape would make the update read past them (the CPU kernel
    loops over the parameter's elements): the update refuses them before touching the weights."""
    small, big = Dense(3, 2), Dense(5, 7)
    optimiser = make()
    small(to_tensor(np.ones((4, 3)))).sum().backward()
    small.update(optimiser)
    other = make()
    other.load_state_dict(optimiser.state_dict())
    big(to_tensor(np.ones((4, 5)))).sum().backward()
    before = big.weights.array.copy()
    with pytest.raises(ValueError, match=r"'weights' has shape \(3, 2\), the parameter \(5, 7\)"):
        big.update(other)
    np.testing.assert_array_equal(big.weights.array, before)


def test_clip_grad_norm_matches_torch_and_leaves_grad_arrays_alone():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    grads = [rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=5).astype(np.float32)]
    params = [Tensor(np.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = Tensor(g, requires_grad=False)
    originals = [g.copy() for g in grads]
    skipped = Tensor(np.zeros(2, dtype=np.float32))  # no grad: ignored
    norm = clip_grad_norm(params + [skipped], max_norm=1.0)
    torch_params = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, g in zip(torch_params, originals):
        p.grad = torch.tensor(g)
    expected = torch.nn.utils.clip_grad_norm_(torch_params, max_norm=1.0)
    assert norm == pytest.approx(expected.item(), rel=1e-6)
    for p, t, g, original in zip(params, torch_params, grads, originals):
        np.testing.assert_allclose(p.grad.array, t.grad.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(g, original)  # the old gradient array is untouched
    total = np.sqrt(sum((p.grad.array.astype(np.float64) ** 2).sum() for p in params))
    assert total == pytest.approx(1.0, rel=1e-5)


def test_clip_grad_norm_below_the_limit_changes_nothing():
    p = Tensor(np.zeros(2, dtype=np.float32))
    grad = Tensor(np.array([0.3, 0.4], dtype=np.float32))
    p.grad = grad
    assert clip_grad_norm([p], 1.0) == pytest.approx(0.5)
    assert p.grad is grad


def test_grad_norm_and_clip_factor():
    p, q, skipped = (Tensor(np.zeros(2, dtype=np.float32)) for _ in range(3))
    p.grad = Tensor(np.array([3.0, 0.0], dtype=np.float32))
    q.grad = Tensor(np.array([0.0, 4.0], dtype=np.float32))
    assert grad_norm([p, q, skipped]) == pytest.approx(5.0)
    assert clip_factor(5.0, 1.0) == pytest.approx(1 / (5.0 + 1e-6))
    assert clip_factor(0.5, 1.0) is None  # below the limit: nothing to scale
    assert clip_factor(0.0, 1.0) is None


@pytest.mark.parametrize("make", [lambda: AdamW(1e-2, weight_decay=0.1), lambda: Adam(1e-2),
                                  lambda: SGD(0.1, momentum=0.9)])  # fmt: skip
def test_update_with_a_grad_multiplier_is_clipping_first(make):
    """optimiser.update(params, grad_multiplier=c) equals clipping the gradients by c and then
    updating (AdamW and Adam fold c into their step; SGD scales a copy), and leaves the
    gradient arrays untouched."""
    rng = np.random.default_rng(3)
    shapes = {"w": (40, 30), "bias": (30,)}
    start = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
    folded = {n: Tensor(a.copy()) for n, a in start.items()}
    clipped = {n: Tensor(a.copy()) for n, a in start.items()}
    folded_opt, clipped_opt = make(), make()
    for _ in range(3):
        grads = {n: rng.normal(size=s).astype(np.float32) * 10 for n, s in shapes.items()}
        for n in shapes:
            folded[n].grad = Tensor(grads[n].copy(), requires_grad=False)
            clipped[n].grad = Tensor(grads[n].copy(), requires_grad=False)
        c = clip_factor(grad_norm(list(folded.items())), 1.0)
        assert c is not None and c < 1
        folded_opt.update(list(folded.items()), grad_multiplier=c)
        clip_grad_norm(list(clipped.items()), 1.0)
        clipped_opt.update(list(clipped.items()))
        for n in shapes:
            np.testing.assert_array_equal(folded[n].grad.array, grads[n])
            np.testing.assert_allclose(folded[n].array, clipped[n].array, rtol=1e-5, atol=1e-6)


def test_bad_hyperparameters_raise():
    with pytest.raises(ValueError, match="learning_rate"):
        SGD(-1.0)
    with pytest.raises(ValueError, match="nesterov"):
        SGD(0.1, nesterov=True)


def test_cpu_adamw_batches_every_parameter_like_one_at_a_time():
    """The batched CPU path (all parameters' blocks in one thread-pool dispatch) gives the
    per-parameter path's numbers bit for bit, decayed and undecayed parameters alike."""
    rng = np.random.default_rng(0)
    shapes = {"w": (300, 400), "embedding": (70, 33), "bias": (5,), "gain": (1,)}
    params = {n: Tensor(rng.normal(size=s).astype(np.float32)) for n, s in shapes.items()}
    reference = {n: p.array.copy() for n, p in params.items()}
    batched, single = AdamW(1e-2, weight_decay=0.1), AdamW(1e-2, weight_decay=0.1)
    single_state: dict = {}
    for _ in range(3):
        grads = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
        for n in shapes:
            params[n].grad = Tensor(grads[n], requires_grad=False)
        batched.update(list(params.items()))
        for n in shapes:  # the one-parameter path, as update_parameter runs it
            decay = single.decoupled_decay(n, params[n])
            _adam_update(np, reference[n], grads[n], single_state.setdefault(n, {}), 1e-2,
                         *single.betas, single.eps, decay)  # fmt: skip
    for n in shapes:
        np.testing.assert_array_equal(params[n].array, reference[n])


@pytest.mark.parametrize("make", [lambda: SGD(1e-2), lambda: Adam(1e-3), lambda: AdamW(1e-3)])
def test_two_parameters_of_one_name_are_refused_not_mixed(make):
    """Two layers updated one by one with one optimiser both name their weights "weights":
    the second would silently take the first one's moments (or crash on another shape)."""
    optimiser = make()
    first, second = Dense(4, 4), Dense(4, 4)
    for layer in (first, second):
        layer(to_tensor(np.ones((2, 4)))).sum().backward()
    optimiser.step()
    first.update(optimiser)
    with pytest.raises(ValueError, match="two different parameters are named 'weights'"):
        second.update(optimiser)
    both = Sequential(first, second)  # one call, distinct names: fine
    both(to_tensor(np.ones((2, 4)))).sum().backward()
    fresh = make()
    fresh.step()
    both.update(fresh)
    assert sorted(fresh.state) == sorted(name for name, _ in both.named_parameters())

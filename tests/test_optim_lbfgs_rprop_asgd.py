"""tricycle.optim's LBFGS, Rprop and ASGD against torch.optim's, side by side in float64:
LBFGS on the Rosenbrock function (its parameters split over two tensors), with and without
the strong Wolfe line search, equal after every ``step(closure)`` with the same number of
closure calls; Rprop and ASGD on a small regression, equal after every step; state_dict
round trips that resume exactly; the errors.

The two LBFGS differ in the last bits (torch fuses its multiply-adds and sums in its own
order), and Rosenbrock's curved valley magnifies that as the iterations go: from most
starting points the runs take the same branches and the same closure calls, but their
parameters drift apart well beyond 1e-10. The starting points here are ones where they do
not, for the line search (whose bracketing and zoom both run from there); the fixed steps
stay within 1e-10 from farther away.
"""

import pickle

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
X, Y = RNG.normal(size=(16, 4)), RNG.normal(size=(16, 3))
FAR = (np.array([-1.5, 2.0]), np.array([0.5, -0.8, 1.2]))  # a point of the 5-d Rosenbrock
NEAR = {
    "2d": (np.array([0.94]), np.array([1.24])),
    "3d": (np.array([1.44]), np.array([0.56, 0.45])),
}


@pytest.fixture
def torch_float64():
    """torch's scalar state (ASGD's eta and mu) in float64, as tricycle keeps it."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


# ------------------------------------------------------------------ LBFGS
def rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    """sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 and its gradient, in numpy: both sides'
    closures take the same numbers, so the optimizers alone are compared (the two engines'
    backward passes round differently, and the valley of this function magnifies that)."""
    valley, rim = x[1:] - x[:-1] * x[:-1], 1 - x[:-1]
    grad = np.zeros_like(x)
    grad[:-1] = -400 * valley * x[:-1] - 2 * rim
    grad[1:] += 200 * valley
    return float((100 * valley * valley + rim * rim).sum()), grad


class Problem:
    """The Rosenbrock function of two parameters (2,) and (3,), in tricycle or in torch,
    with the closure of ``step`` and its call count."""

    def __init__(self, ours: bool, start=FAR):
        self.ours, self.calls = ours, 0
        if ours:
            self.params = [Tensor(s.copy(), requires_grad=True) for s in start]
        else:
            self.params = [torch.tensor(s.copy(), requires_grad=True) for s in start]

    def closure(self, optimizer):
        def closure():
            self.calls += 1
            optimizer.zero_grad()
            loss, grad = rosenbrock(self.values())
            for p, g in zip(self.params, np.split(grad, [self.params[0].shape[0]])):
                p.grad = Tensor(g, requires_grad=False) if self.ours else torch.from_numpy(g)
            return Tensor(loss) if self.ours else torch.tensor(loss)

        return closure

    def values(self) -> np.ndarray:
        return np.concatenate([np.array(p.array if self.ours else p.detach().numpy())
                               for p in self.params])  # fmt: skip


LINE_SEARCH_CASES = {
    "strong-wolfe": dict(line_search_fn="strong_wolfe"),
    "short-history": dict(line_search_fn="strong_wolfe", history_size=2, max_iter=7),
    "few-evaluations": dict(line_search_fn="strong_wolfe", max_iter=10, max_eval=6),
    "tolerances": dict(line_search_fn="strong_wolfe", tolerance_grad=1e-2, tolerance_change=1e-4),
}
FIXED_STEP_CASES = {
    "fixed-step": dict(lr=0.05, max_iter=6),
    "fixed-step-short-history": dict(lr=0.02, max_iter=9, history_size=3),
    "fixed-step-one-iteration": dict(lr=0.01, max_iter=1),
}
CASES_AND_STARTS = [(case, NEAR[d]) for case in LINE_SEARCH_CASES for d in NEAR] + [
    (case, FAR) for case in FIXED_STEP_CASES
]


@pytest.mark.parametrize("case, start", CASES_AND_STARTS)
def test_lbfgs_on_rosenbrock_as_torch_after_every_step(case, start):
    options = {**LINE_SEARCH_CASES, **FIXED_STEP_CASES}[case]
    ours, theirs = Problem(True, start), Problem(False, start)
    mine = optim.LBFGS(ours.params, **options)
    reference = torch.optim.LBFGS(theirs.params, **options)
    for _ in range(8):
        loss = mine.step(ours.closure(mine))
        expected = reference.step(theirs.closure(reference))
        np.testing.assert_allclose(float(loss), expected.item(), rtol=1e-10)
        np.testing.assert_allclose(ours.values(), theirs.values(), rtol=1e-10, atol=1e-12)
        assert ours.calls == theirs.calls
    mine_state, their_state = mine.state_dict()["state"][0], reference.state_dict()["state"][0]
    assert set(mine_state) == set(their_state)
    assert mine_state["func_evals"] == their_state["func_evals"] == ours.calls
    assert mine_state["n_iter"] == their_state["n_iter"]
    if case in ("strong-wolfe", "few-evaluations"):
        assert rosenbrock(ours.values())[0] < 1e-9  # at the minimum (1, ..., 1)


def rosenbrock_of(params) -> Tensor:
    """The Rosenbrock function of tricycle Tensors, differentiated by the engine."""
    x = tricycle.cat(params)
    valley, rim = x[1:] - x[:-1] * x[:-1], 1 - x[:-1]
    return (100 * valley * valley + rim * rim).sum()


def autodiff_closure(params, optimizer):
    def closure():
        optimizer.zero_grad()
        loss = rosenbrock_of(params)
        loss.backward()
        return loss

    return closure


def test_lbfgs_state_dict_round_trip_resumes_exactly():
    params = [Tensor(x.copy(), requires_grad=True) for x in FAR]
    mine = optim.LBFGS(params, line_search_fn="strong_wolfe", history_size=3, max_iter=4)
    mine.step(autodiff_closure(params, mine))
    mine.step(autodiff_closure(params, mine))
    saved = pickle.loads(pickle.dumps(mine.state_dict()))
    assert isinstance(saved["state"][0]["old_dirs"][0], np.ndarray)
    copies = [Tensor(p.array.copy(), requires_grad=True) for p in params]
    other = optim.LBFGS(copies, line_search_fn="strong_wolfe", history_size=3, max_iter=4)
    other.load_state_dict(saved)
    for _ in range(3):
        mine.step(autodiff_closure(params, mine))
        other.step(autodiff_closure(copies, other))
        for p, q in zip(params, copies):
            np.testing.assert_array_equal(p.array, q.array)
    evals = [o.state_dict()["state"][0]["func_evals"] for o in (mine, other)]
    assert evals[0] == evals[1]


def test_lbfgs_with_the_engines_gradients_finds_the_minimum():
    params = [Tensor(np.array([-1.2]), requires_grad=True), Tensor(np.ones(1), requires_grad=True)]
    mine = optim.LBFGS(params, line_search_fn="strong_wolfe")
    for _ in range(3):
        mine.step(autodiff_closure(params, mine))
    assert float(rosenbrock_of(params)) < 1e-9  # at (1, 1), to tolerance_change
    np.testing.assert_allclose(np.concatenate([p.array for p in params]), 1.0, atol=1e-4)


def test_lbfgs_stops_at_once_where_the_gradient_is_zero():
    problem = Problem(True, start=(np.ones(2), np.ones(3)))
    mine = optim.LBFGS(problem.params)
    assert float(mine.step(problem.closure(mine))) == 0.0
    assert problem.calls == 1 and mine.state_dict()["state"][0]["n_iter"] == 0


def test_lbfgs_errors():
    a, b = Tensor(np.ones(2), requires_grad=True), Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS: one parameter group only"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="line_search_fn must be None or one of 'strong_wolfe'"):
        optim.LBFGS([a], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="history_size must be an integer >= 1"):
        optim.LBFGS([a], history_size=0)
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        optim.LBFGS([a], max_iter=2.5)
    mine = optim.LBFGS([a, b])
    with pytest.raises(TypeError, match="LBFGS.step: needs a closure"):
        mine.step()
    saved = {"state": {0: {"d": np.zeros(4)}}, "param_groups": mine.state_dict()["param_groups"]}
    with pytest.raises(ValueError, match=r"'d' has shape \(4,\); expected \(5,\)"):
        mine.load_state_dict(saved)
    with pytest.raises(ValueError, match=r"state for parameters \[1\]"):
        mine.load_state_dict({**saved, "state": {1: {}}})


# ------------------------------------------------------------------ Rprop and ASGD
def twin_models():
    """The same linear regression in torch and in tricycle.nn, in float64."""
    torch.manual_seed(2)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    theirs = theirs.double()
    ours = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def backward(model):
    if isinstance(model, torch.nn.Module):
        ((model(torch.from_numpy(X)) - torch.from_numpy(Y)) ** 2).mean().backward()
    else:
        (((model(Tensor(X, requires_grad=False)) - Y) ** 2).mean()).backward()


def assert_same_weights(ours, theirs, rtol=1e-10):
    mine = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(mine[name], value.numpy(), rtol=rtol, atol=1e-13, err_msg=name)


CASES = {
    "Rprop": dict(),
    "Rprop-etas-bounds": dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08)),
    "Rprop-maximize": dict(lr=0.02, maximize=True),
    "ASGD": dict(lr=0.1),
    "ASGD-averaging-decay": dict(lr=0.2, lambd=0.05, alpha=0.5, t0=3, weight_decay=0.1),
    "ASGD-maximize": dict(lr=0.05, t0=2, maximize=True),
}


@pytest.mark.usefixtures("torch_float64")
@pytest.mark.parametrize("case", list(CASES))
def test_a_regression_trains_as_with_torch_after_every_step(case):
    name = case.split("-")[0]
    ours, theirs = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **CASES[case])
    reference = getattr(torch.optim, name)(theirs.parameters(), **CASES[case])
    for _ in range(12):
        for model, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad()
            backward(model)
            optimizer.step()
        assert_same_weights(ours, theirs)
    mine_state, their_state = mine.state_dict()["state"], reference.state_dict()["state"]
    assert set(mine_state[0]) == set(their_state[0])
    for slot in ("ax", "eta", "mu", "prev", "step_size"):
        if slot in their_state[0]:
            for i in their_state:
                expected = np.asarray(their_state[i][slot].numpy())
                got = np.asarray(mine_state[i][slot])
                got = got.T if got.shape != expected.shape else got  # Linear: transposed
                np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13, err_msg=slot)


@pytest.mark.parametrize("name, options", [("Rprop", {}), ("ASGD", {"t0": 2})])
def test_state_dict_round_trip_resumes_exactly(name, options):
    ours, _ = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **options)
    for _ in range(3):
        mine.zero_grad()
        backward(ours)
        mine.step()
    saved = pickle.loads(pickle.dumps(mine.state_dict()))
    copy, _ = twin_models()
    for p, q in zip(copy.parameters(), ours.parameters()):
        p.array[...] = q.array
    other = getattr(optim, name)(copy.parameters(), **options)
    other.load_state_dict(saved)
    for _ in range(3):
        for model, optimizer in ((ours, mine), (copy, other)):
            optimizer.zero_grad()
            backward(model)
            optimizer.step()
    for p, q in zip(ours.parameters(), copy.parameters()):
        np.testing.assert_array_equal(p.array, q.array)


def test_rprop_and_asgd_errors():
    w = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match=r"Rprop: etas must be \(eta-, eta\+\)"):
        optim.Rprop([w], etas=(0.5, 0.9))
    with pytest.raises(TypeError, match="Rprop: etas must be"):
        optim.Rprop([w], etas=0.5)
    with pytest.raises(ValueError, match=r"Rprop: step_sizes must be \(min, max\)"):
        optim.Rprop([w], step_sizes=(1.0, 0.1))
    with pytest.raises(ValueError, match="Rprop: differentiable=True is not supported"):
        optim.Rprop([w], differentiable=True)
    with pytest.raises(ValueError, match="ASGD: lr must be a finite number >= 0"):
        optim.ASGD([w], lr=-1.0)
    with pytest.raises(ValueError, match="ASGD: t0 must be a finite number >= 0"):
        optim.ASGD([w], t0=-5)

"""The rest of torch.distributions' transforms and constraints against torch's, in float64:
``CatTransform``, ``StackTransform``, ``CorrCholeskyTransform``, ``PositiveDefiniteTransform``
and ``CumulativeDistributionTransform`` (forward map, inverse, log |det Jacobian|, their
gradients, domains and codomains, shapes), the utils ``tril_matrix_to_vec`` and
``vec_to_tril_matrix``, the new constraints (``cat``, ``stack``, ``corr_cholesky``,
``lower_triangular``, ``square``, ``symmetric``, ``positive_semidefinite``) and the registries
``biject_to`` and ``transform_to`` (the same transform as torch's for each constraint, the
values matching, and ``register`` for a user's), with the errors."""

import numpy as np
import pytest

import tricycle.distributions as D
from tests.helpers import check_grads, randn
from tricycle.distributions import constraints
from tricycle.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
from tricycle.tensor import Tensor


def made(M, name: str, tensor):
    """The transform ``name`` of the module M (tricycle's or torch's distributions, whose
    tensors ``tensor`` makes)."""
    T = M.transforms
    return {
        "Cat": lambda: T.CatTransform(
            [T.ExpTransform(), T.AffineTransform(0.5, -2.0), T.SigmoidTransform()],
            dim=1,
            lengths=[2, 1, 2],
        ),  # fmt: skip
        "Cat(dim=-1, event)": lambda: T.CatTransform(
            [T.IndependentTransform(T.ExpTransform(), 1), T.TanhTransform()],
            dim=-1,
            lengths=[3, 2],
        ),  # fmt: skip
        "Stack": lambda: T.StackTransform([T.ExpTransform(), T.SoftplusTransform()], dim=0),
        "Stack(dim=-1)": lambda: T.StackTransform(
            [T.TanhTransform(), T.AffineTransform(1.0, 3.0), T.ExpTransform()], dim=-1
        ),
        "CorrCholesky": lambda: T.CorrCholeskyTransform(),
        "CDF": lambda: T.CumulativeDistributionTransform(
            M.Normal(tensor(np.array(0.3)), tensor(np.array(1.7)))
        ),
    }[name]()


def inputs(name: str) -> np.ndarray:
    return {
        "Cat": randn(3, 5, seed=2),
        "Cat(dim=-1, event)": randn(2, 5, seed=3),
        "Stack": randn(2, 4, seed=4),
        "Stack(dim=-1)": randn(4, 3, seed=5),
        "CorrCholesky": randn(2, 6, seed=6),
        "CDF": randn(3, 4, seed=7),
    }[name]


@pytest.mark.parametrize("name", ["Cat", "Cat(dim=-1, event)", "Stack", "Stack(dim=-1)",
                                  "CorrCholesky", "CDF"])  # fmt: skip
def test_transforms_match_torch_with_gradients(name):
    torch = pytest.importorskip("torch")
    x = inputs(name)
    ours = made(D, name, Tensor)
    theirs = made(torch.distributions, name, torch.tensor)
    xo, xt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    lo, lt = ours.log_abs_det_jacobian(xo, yo), theirs.log_abs_det_jacobian(xt, yt)
    assert lo.shape == tuple(lt.shape)
    np.testing.assert_allclose(lo.array, lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = randn(*lo.shape, seed=11)
    (yo.sum() + (lo * Tensor(weights)).sum()).backward()
    (yt.sum() + (lt * torch.tensor(weights)).sum()).backward()
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    back = ours.inv(yo)
    np.testing.assert_allclose(back.array, theirs.inv(yt).detach().numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(back.array, x, rtol=1e-7, atol=1e-9)
    assert ours.bijective is theirs.bijective is True
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    if name != "Cat(dim=-1, event)":  # pieces of unequal event dims: torch's check fails too
        assert np.array_equal(ours.codomain.check(yo), theirs.codomain.check(yt).numpy())


def test_corr_cholesky_transform_gradient_against_finite_differences_and_shapes():
    torch = pytest.importorskip("torch")
    t = D.transforms.CorrCholeskyTransform()
    x = randn(2, 3, seed=8)

    def f(v):
        y = t(v)
        return (y * Tensor(randn(2, 3, 3, seed=9))).sum() + t.log_abs_det_jacobian(v, y).sum()

    check_grads(f, [x])
    y = t(Tensor(x)).array
    np.testing.assert_allclose((y * y).sum(-1), np.ones((2, 3)), rtol=1e-12)  # unit rows
    theirs = torch.distributions.transforms.CorrCholeskyTransform()
    for shape in [(6,), (4, 10), (1,)]:
        assert t.forward_shape(shape) == tuple(theirs.forward_shape(torch.Size(shape)))
    assert t.inverse_shape((5, 4, 4)) == (5, 6)
    with pytest.raises(ValueError, match="not D"):
        t.forward_shape((4,))
    with pytest.raises(ValueError, match="not square"):
        t.inverse_shape((3, 4))


def test_positive_definite_transform_matches_torch_and_inverts():
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 3, seed=10)
    ours = D.transforms.PositiveDefiniteTransform()
    theirs = torch.distributions.transforms.PositiveDefiniteTransform()
    xo, xt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-12)
    (yo * Tensor(x)).sum().backward()
    (yt * torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.inv(yo).array, np.tril(x), rtol=1e-9, atol=1e-12)
    assert ours == D.transforms.PositiveDefiniteTransform() and ours.codomain.check(yo).all()


def test_cat_and_stack_transforms_errors_and_caching():
    T = D.transforms
    cat = T.CatTransform([T.ExpTransform(), T.ExpTransform()], dim=0, lengths=[1, 2])
    assert cat.length == 3 and cat.event_dim == 0
    with pytest.raises(ValueError, match=r"x.shape\[0\] = 2 must equal 3"):
        cat(Tensor(np.zeros(2)))
    with pytest.raises(IndexError, match="dim 0 is out of range"):
        cat(Tensor(np.array(0.0)))
    with pytest.raises(ValueError, match="2 lengths for 1 transforms"):
        T.CatTransform([T.ExpTransform()], lengths=[1, 2])
    with pytest.raises(TypeError, match="CatTransform: tseq"):
        T.CatTransform([np.exp])
    stack = T.StackTransform([T.ExpTransform()], dim=0, cache_size=1)
    x = Tensor(np.zeros((1, 2)))
    y = stack(x)
    assert stack(x) is y and stack.inv(y) is x  # the cache: the last pair
    assert stack.with_cache(1) is stack and stack.with_cache(0)._cache_size == 0
    with pytest.raises(ValueError, match="StackTransform"):
        stack(Tensor(np.zeros((2, 2))))
    cdf = T.CumulativeDistributionTransform(D.Exponential(2.0))
    assert cdf.domain is constraints.nonnegative and cdf.sign == 1
    with pytest.raises(TypeError, match="CumulativeDistributionTransform"):
        T.CumulativeDistributionTransform("normal")


@pytest.mark.parametrize("diag", [-2, -1, 0, 1, 2])
def test_tril_matrix_to_vec_and_back_match_torch(diag):
    torch = pytest.importorskip("torch")
    from torch.distributions import utils as tu

    m = randn(2, 4, 4, seed=12)
    ours = tril_matrix_to_vec(Tensor(m, requires_grad=True), diag)
    theirs = tu.tril_matrix_to_vec(torch.tensor(m), diag)
    np.testing.assert_array_equal(ours.array, theirs.numpy())
    back = vec_to_tril_matrix(ours, diag)
    np.testing.assert_array_equal(back.array, tu.vec_to_tril_matrix(theirs, diag).numpy())
    check_grads(lambda v: (vec_to_tril_matrix(v, diag) ** 2).sum(), [theirs.numpy()])
    check_grads(lambda a: (tril_matrix_to_vec(a, diag) ** 3).sum(), [m])


def test_tril_helpers_errors():
    with pytest.raises(ValueError, match=r"diag \(4\) provided is outside \[-4, 3\]"):
        tril_matrix_to_vec(Tensor(np.zeros((4, 4))), 4)
    with pytest.raises(ValueError, match="size of last dimension is 5"):
        vec_to_tril_matrix(Tensor(np.zeros(5)))
    assert vec_to_tril_matrix(Tensor(np.zeros(0)), -1).shape == (1, 1)  # torch's too


def new_constraints(M):
    c = M.constraints
    return {
        "cat": c.cat([c.positive, c.real, c.unit_interval], dim=1, lengths=[1, 2, 1]),
        "stack": c.stack([c.positive, c.unit_interval], dim=0),
        "corr_cholesky": c.corr_cholesky,
        "lower_triangular": c.lower_triangular,
        "square": c.square,
        "symmetric": c.symmetric,
        "positive_semidefinite": c.positive_semidefinite,
    }


def constraint_values(name: str) -> list:
    rng = np.random.default_rng(13)
    if name in ("cat", "stack"):
        return [rng.uniform(-0.5, 1.5, size=(2, 4)) for _ in range(4)]
    a = rng.normal(size=(3, 3, 3))
    lower = np.tril(a)
    lower[..., range(3), range(3)] = np.abs(lower[..., range(3), range(3)])
    corr = lower / np.linalg.norm(lower, axis=-1, keepdims=True)
    psd = a @ np.swapaxes(a, -1, -2)
    return [a, lower, corr, psd, psd - 2 * np.eye(3), np.zeros((2, 3, 4)), corr[..., 1:, :]]


@pytest.mark.parametrize("name", ["cat", "stack", "corr_cholesky", "lower_triangular",
                                  "square", "symmetric", "positive_semidefinite"])  # fmt: skip
def test_new_constraints_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = new_constraints(D)[name], new_constraints(torch.distributions)[name]
    assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    for value in constraint_values(name):
        if name == "corr_cholesky" and value.shape[-2] != value.shape[-1]:
            continue  # torch's check reads a square matrix's diagonal
        expected = theirs.check(torch.tensor(value)).numpy()
        np.testing.assert_array_equal(ours.check(Tensor(value)), expected)


def test_cat_and_stack_constraints_refuse_bad_arguments():
    with pytest.raises(TypeError, match="constraints.cat: cseq must hold Constraints"):
        constraints.cat([constraints.real, 1.0])
    with pytest.raises(ValueError, match="1 lengths for 2 constraints"):
        constraints.cat([constraints.real, constraints.real], lengths=[1])
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        constraints.stack([constraints.real], dim=2).check(np.zeros(3))


def registry_constraints(M):
    c = M.constraints
    return [c.real, c.positive, c.nonnegative, c.greater_than(1.5), c.greater_than_eq(-2.0),
            c.less_than(0.5), c.unit_interval, c.interval(-1.0, 3.0),
            c.half_open_interval(0.0, 2.0), c.simplex, c.real_vector, c.lower_cholesky,
            c.positive_definite, c.positive_semidefinite, c.corr_cholesky,
            c.independent(c.positive, 2), c.cat([c.positive, c.unit_interval], 0, [2, 3]),
            c.stack([c.less_than(1.0), c.real], 1)]  # fmt: skip


def registry_input(constraint, rng) -> np.ndarray:
    """An unconstrained input of a shape the transform onto ``constraint`` takes."""
    if constraint.event_dim == 2 and type(constraint).__name__ != "CorrCholesky":
        return rng.normal(size=(2, 3, 3))
    if type(constraint).__name__ == "CorrCholesky":
        return rng.normal(size=(2, 3))
    return rng.normal(size=(5, 2))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_give_torchs_transforms(registry):
    torch = pytest.importorskip("torch")
    ours_registry, theirs_registry = getattr(D, registry), getattr(torch.distributions, registry)
    rng = np.random.default_rng(14)
    pairs = zip(registry_constraints(D), registry_constraints(torch.distributions))
    for ours_c, theirs_c in pairs:
        try:
            theirs = theirs_registry(theirs_c)
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match="Cannot transform"):
                ours_registry(ours_c)
            continue
        ours = ours_registry(ours_c)
        assert type(ours).__name__ == type(theirs).__name__, (ours_c, ours, theirs)
        x = registry_input(ours_c, rng)
        yo, yt = ours(Tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(yo.array, yt.numpy(), rtol=1e-12, atol=1e-14)
        assert ours_c.check(yo).all()
        if ours.bijective:
            lo, lt = (
                ours.log_abs_det_jacobian(Tensor(x), yo),
                theirs.log_abs_det_jacobian(torch.tensor(x), yt),
            )
            np.testing.assert_allclose(lo.array, lt.numpy(), rtol=1e-10, atol=1e-12)


def test_registry_register_a_users_constraint():
    class Odd(constraints.Constraint):
        def check(self, value):
            return value.array % 2 == 1

    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(Odd)
    def _odd(constraint):
        return D.transforms.AffineTransform(1.0, 2.0)

    assert isinstance(registry(Odd()), D.transforms.AffineTransform)
    registry.register(Odd(), lambda c: D.transforms.ExpTransform())  # an instance: its class
    assert isinstance(registry(Odd()), D.transforms.ExpTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform Real constraints"):
        registry(constraints.real)
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        registry.register(int, _odd)
    assert isinstance(D.biject_to(constraints.positive), D.transforms.ComposeTransform)

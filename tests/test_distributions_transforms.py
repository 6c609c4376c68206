"""tricycle.distributions.transforms and TransformedDistribution against torch's, in float64:
each transform's forward map, inverse and log |det Jacobian| with their gradients, the
domains' and codomains' event dims, composition, caching, shapes, a transformed
distribution's log_prob, cdf, icdf, draws and shapes, finite differences, and the errors."""

import numpy as np
import pytest

import tricycle.distributions as D
from tests.helpers import check_grads, randn
from tricycle.tensor import Tensor


def both_transforms(name: str, M, lib_tensor):
    """The transform ``name`` of the module M (tricycle's or torch's distributions)."""
    T = M.transforms
    scale = lib_tensor(np.array([0.5, -2.0, 1.5, 3.0]))
    return {
        "Exp": lambda: T.ExpTransform(),
        "Affine": lambda: T.AffineTransform(0.3, -1.7),
        "Affine(tensor)": lambda: T.AffineTransform(lib_tensor(np.array(0.4)), scale),
        "Affine(event_dim=1)": lambda: T.AffineTransform(0.1, scale, event_dim=1),
        "Sigmoid": lambda: T.SigmoidTransform(),
        "Tanh": lambda: T.TanhTransform(),
        "Softplus": lambda: T.SoftplusTransform(),
        "Power": lambda: T.PowerTransform(lib_tensor(np.array([2.0, 0.5, 1.5, 3.0]))),
        "StickBreaking": lambda: T.StickBreakingTransform(),
        "Compose": lambda: T.ComposeTransform([T.AffineTransform(0.2, 0.5), T.ExpTransform()]),
        "Independent(Exp)": lambda: T.IndependentTransform(T.ExpTransform(), 1),
        "Compose(Exp, StickBreaking)": lambda: T.ComposeTransform(
            [T.ExpTransform(), T.StickBreakingTransform()]
        ),
    }[name]()


BIJECTIONS = ["Exp", "Affine", "Affine(tensor)", "Affine(event_dim=1)", "Sigmoid", "Tanh",
              "Softplus", "Power", "StickBreaking", "Compose", "Independent(Exp)",
              "Compose(Exp, StickBreaking)"]  # fmt: skip
POSITIVE_DOMAIN = {"Power"}


def inputs(name: str) -> np.ndarray:
    x = randn(3, 4, seed=1)
    return np.abs(x) + 0.2 if name in POSITIVE_DOMAIN else x


@pytest.mark.parametrize("name", BIJECTIONS)
def test_forward_inverse_and_log_jacobian_match_torch_with_gradients(name):
    torch = pytest.importorskip("torch")
    x = inputs(name)
    ours = both_transforms(name, D, lambda a: Tensor(a, requires_grad=False))
    theirs = both_transforms(name, torch.distributions, torch.tensor)
    xo, xt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    ladj_o, ladj_t = ours.log_abs_det_jacobian(xo, yo), theirs.log_abs_det_jacobian(xt, yt)
    assert ladj_o.shape == tuple(ladj_t.shape)
    np.testing.assert_allclose(ladj_o.array, ladj_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    (yo.sum() + ladj_o.sum() * 0.7).backward()
    (yt.sum() + ladj_t.sum() * 0.7).backward()
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    back = ours.inv(Tensor(yt.detach().numpy()))
    np.testing.assert_allclose(back.array, x, rtol=1e-7, atol=1e-9)
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.bijective == theirs.bijective
    assert ours.forward_shape((5, 4)) == tuple(theirs.forward_shape((5, 4)))
    assert ours.inv.inverse_shape((5, 4)) == tuple(theirs.inv.inverse_shape((5, 4)))
    assert ours.inv.inv is ours


@pytest.mark.parametrize("name", ["Softmax", "LowerCholesky", "Abs", "Reshape"])
def test_the_maps_without_a_log_jacobian_match_torch(name):
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 3, seed=2)
    T, TT = D.transforms, torch.distributions.transforms
    make = {"Softmax": lambda M: M.SoftmaxTransform(),
            "LowerCholesky": lambda M: M.LowerCholeskyTransform(),
            "Abs": lambda M: M.AbsTransform(),
            "Reshape": lambda M: M.ReshapeTransform((3, 3), (9,))}[name]  # fmt: skip
    ours, theirs = make(T), make(TT)
    xo, xt = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    weights = randn(*yo.shape, seed=3)
    (yo * Tensor(weights)).sum().backward()
    (yt * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.inv(yo).array, theirs.inv(yt).detach().numpy(), rtol=1e-10)
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    if name == "Reshape":
        ladj = ours.log_abs_det_jacobian(xo, yo)
        assert ladj.shape == (2,) and not ladj.array.any()
        assert ours.forward_shape((7, 3, 3)) == (7, 9)
        assert ours.inverse_shape((7, 9)) == (7, 3, 3)


def test_stick_breaking_maps_zero_to_the_uniform_point_and_its_jacobian_by_differences():
    T = D.transforms
    y = T.StickBreakingTransform()(Tensor(np.zeros((2, 4))))
    np.testing.assert_allclose(y.array, np.full((2, 5), 0.2), rtol=1e-12)
    t = T.StickBreakingTransform()
    check_grads(lambda x: t.log_abs_det_jacobian(x, t(x)), randn(3, 4, seed=4))
    check_grads(lambda x: t(x), randn(3, 4, seed=5))
    tanh = T.TanhTransform()
    check_grads(lambda x: tanh.log_abs_det_jacobian(x, tanh(x)), randn(5, seed=6))


def test_cache_returns_the_same_tensors_and_equality_is_by_kind_and_parameters():
    T = D.transforms
    t = T.ExpTransform(cache_size=1)
    x = Tensor(randn(3, seed=7))
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.ExpTransform().inv == T.ExpTransform().inv
    assert T.ExpTransform().with_cache(1)._cache_size == 1
    assert T.AffineTransform(0.0, -2.0).sign == -1 and T.ExpTransform().sign == 1
    assert T.identity_transform(x) is x


def test_compose_reads_the_widest_event_and_sums_the_log_jacobian_over_it():
    torch = pytest.importorskip("torch")
    x = randn(2, 4, seed=8)
    parts = lambda M: [M.ExpTransform(), M.AffineTransform(0.0, 2.0), M.StickBreakingTransform()]  # noqa: E731
    ours = D.transforms.ComposeTransform(parts(D.transforms))
    theirs = torch.distributions.transforms.ComposeTransform(parts(torch.distributions.transforms))
    assert ours.domain.event_dim == 1 and ours.codomain.event_dim == 1
    xo, xt = Tensor(x), torch.tensor(x)
    ladj = ours.log_abs_det_jacobian(xo, ours(xo))
    assert ladj.shape == (2,)
    np.testing.assert_allclose(ladj.array, theirs.log_abs_det_jacobian(xt, theirs(xt)).numpy())
    assert ours.inv(ours(xo)).shape == (2, 4)


CASES = {  # name -> (base of a module M, transforms of M, values to score)
    "Affine(Exp(Normal))": (lambda M, p: M.Normal(p["loc"], p["scale"]),
                            lambda T, p: [T.ExpTransform(), T.AffineTransform(1.0, p["a"])]),
    "StickBreaking(Normal)": (lambda M, p: M.Normal(p["loc"], p["scale"]),
                              lambda T, p: T.StickBreakingTransform()),
    "Sigmoid(Uniform)": (lambda M, p: M.Uniform(p["loc"], p["loc"] + p["scale"]),
                         lambda T, p: [T.SigmoidTransform()]),
}  # fmt: skip


def make_case(name, lib, tensor):
    arrays = {"loc": randn(2, 3, seed=9), "scale": np.array([0.5, 1.2, 2.0]), "a": np.array(1.5)}
    p = {k: tensor(a) for k, a in arrays.items()}
    base, transforms = CASES[name]
    distributions = lib.distributions if hasattr(lib, "distributions") else lib
    return distributions.TransformedDistribution(
        base(distributions, p), transforms(distributions.transforms, p)
    ), p


@pytest.mark.parametrize("name", list(CASES))
def test_transformed_distribution_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, p_ours = make_case(name, D, lambda a: Tensor(a, requires_grad=True))
    theirs, p_theirs = make_case(name, torch, lambda a: torch.tensor(a, requires_grad=True))
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)
    assert ours.sample((4,)).shape == tuple(theirs.sample((4,)).shape)
    torch.manual_seed(0)
    value = theirs.sample((4,)).numpy()
    lp_o, lp_t = ours.log_prob(Tensor(value)), theirs.log_prob(torch.tensor(value))
    np.testing.assert_allclose(lp_o.array, lp_t.detach().numpy(), rtol=1e-9, atol=1e-10)
    lp_o.sum().backward()
    lp_t.sum().backward()
    for key in p_theirs:
        want = p_theirs[key].grad
        got = p_ours[key].grad
        if want is None:
            assert got is None or not got.array.any()
        else:
            np.testing.assert_allclose(got.array, want.numpy(), rtol=1e-9, atol=1e-10)
    if name != "StickBreaking(Normal)":
        want = theirs.cdf(torch.tensor(value)).detach().numpy()
        np.testing.assert_allclose(ours.cdf(Tensor(value)).array, want, rtol=1e-9)
        u = np.random.default_rng(1).uniform(0.05, 0.95, (4, 2, 3))
        want = theirs.icdf(torch.tensor(u)).detach().numpy()
        np.testing.assert_allclose(ours.icdf(Tensor(u)).array, want, rtol=1e-9)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.rsample((2,)).args is not None and ours.sample((2,)).args is None


def test_transformed_distribution_expands_its_base():
    ours, _ = make_case("Affine(Exp(Normal))", D, Tensor)
    wide = ours.expand((5, 2, 3))
    assert wide.batch_shape == (5, 2, 3) and wide.base_dist.batch_shape == (5, 2, 3)
    assert wide.sample().shape == (5, 2, 3)


def test_errors_name_the_transform_and_what_was_expected():
    T = D.transforms
    with pytest.raises(TypeError, match="ComposeTransform: parts"):
        T.ComposeTransform([T.ExpTransform(), "exp"])
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    with pytest.raises(ValueError, match="same number of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match=r"expected a shape ending in \(2, 3\)"):
        T.ReshapeTransform((2, 3), (6,))(Tensor(np.zeros((4, 3))))
    with pytest.raises(TypeError, match="TransformedDistribution: transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), ["exp"])
    with pytest.raises(TypeError, match="TransformedDistribution: base_distribution"):
        D.TransformedDistribution("normal", T.ExpTransform())
    with pytest.raises(ValueError, match="needs at least 1 axes"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.StickBreakingTransform())
    with pytest.raises(NotImplementedError, match="AbsTransform.log_abs_det_jacobian"):
        T.AbsTransform().log_abs_det_jacobian(Tensor(np.ones(2)), Tensor(np.ones(2)))

"""Double backward (``create_graph=True``) of the ops that still refused it, against torch in
float64 and finite differences (``gradgradcheck``): ``linalg.solve_triangular`` (every
upper/left/unitriangular, broadcast batches: ``second_order_solve``), ``F.grid_sample``
(bilinear and nearest, every padding mode, align_corners both, 2-D and 3-D, through
``affine_grid`` too: ``second_order_sampling``) and the special functions
(``second_order_special``: ``i0e``, ``i1e``, ``gammainc``/``gammaincc``, ``zeta``,
``copysign``, ``nextafter``, ``deg2rad``, ``rad2deg``). Each is checked by its first
derivatives, a Hessian-vector product (the gradient of their weighted sum), the gradient of
their plain sum, and for some a third derivative or a full Hessian; what torch refuses
raises; every new rule is met; the GPU as the host."""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
from tests.second_order_checks import (
    F_of,
    arrays,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    constant,
    drawn,
    exercise,
    lib_of,
    rules_met,
)
from tricycle import backend, second_order_final, second_order_sampling, second_order_special

torch = pytest.importorskip("torch")


def _grid_sample_twice():
    x = torch.ones(1, 1, 2, 2, dtype=torch.float64, requires_grad=True)
    grid = torch.full((1, 1, 1, 2), 0.3, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.grid_sample(x, grid, align_corners=False)
    gx, gg = torch.autograd.grad((y**2).sum(), (x, grid), create_graph=True)
    torch.autograd.grad(gx.sum() + gg.sum(), (x, grid))


def _nextafter_once():
    a = torch.ones(2, dtype=torch.float64, requires_grad=True)
    torch.autograd.grad(torch.nextafter(a, torch.zeros(2, dtype=torch.float64)).sum(), a)


@functools.cache
def torch_lacks(feature: str) -> bool:
    """Whether this torch cannot differentiate ``feature`` (torch 2.13 can; torch 2.11, on
    some GPU machines, has no double backward of grid_sample and no derivative of nextafter):
    the comparisons with torch skip there."""
    try:
        {"grid_sample": _grid_sample_twice, "nextafter": _nextafter_once}[feature]()
    except (RuntimeError, NotImplementedError):
        return True
    return False


def needs_torchs(name: str) -> None:
    """Skip a comparison with torch of the case ``name`` that this torch cannot make."""
    feature = next((f for f in ("grid_sample", "nextafter") if name.startswith(f)), None)
    if feature is not None and torch_lacks(feature):
        pytest.skip(f"torch {torch.__version__} does not differentiate {feature} so")


def well_posed(a):
    """a + 3 I: a triangle far from singular."""
    return a + constant(a, 3 * np.eye(a.shape[-1]))


def triangular(upper, left, unitriangular):
    def fn(A, B):
        X = lib_of(A).linalg.solve_triangular(
            well_posed(A), B, upper=upper, left=left, unitriangular=unitriangular
        )
        return (X**3).sum()

    return fn


def sampled(mode, padding_mode, align_corners):
    def fn(x, grid):
        y = F_of(x).grid_sample(
            x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )
        return (y**3).sum()

    return fn


def signs(x):
    return constant(x, np.resize([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0], x.shape))


PADDINGS = ("zeros", "border", "reflection")
MODES = list(itertools.product(("bilinear", "nearest"), PADDINGS, (False, True)))
BILINEAR = [m for m in MODES if m[0] == "bilinear"]
# name -> (fn, input shapes, (low, high)): every input differentiated twice
CASES = {
    "solve_triangular": (triangular(True, True, False), [(2, 3, 3), (3, 2)], (-1, 1)),
    "solve_triangular_lower_right_unit": (
        triangular(False, False, True),
        [(3, 3), (2, 3)],
        (-1, 1),
    ),
    "grid_sample": (sampled("bilinear", "zeros", False), [(2, 2, 3, 4), (2, 2, 3, 2)], (-1.2, 1.2)),
    "grid_sample_3d": (
        sampled("bilinear", "reflection", True),
        [(1, 2, 2, 3, 2), (1, 2, 1, 2, 3)],
        (-1.4, 1.4),
    ),
    "grid_sample_nearest": (
        sampled("nearest", "border", False),
        [(1, 2, 3, 3), (1, 2, 2, 2)],
        (-1.2, 1.2),
    ),
    "i0e": (lambda x: (lib_of(x).special.i0e(x * signs(x)) ** 3).sum(), [(7,)], (0.2, 2.5)),
    "i1e": (lambda x: (lib_of(x).special.i1e(x * signs(x)) ** 3).sum(), [(7,)], (0.2, 2.5)),
    "deg_rad": (
        lambda x: (lib_of(x).deg2rad(x) ** 3 + lib_of(x).rad2deg(x) ** 2).sum(),
        [(2, 3)],
        (-1, 1),
    ),
    "copysign": (
        lambda a, b: (lib_of(a).copysign(a * signs(a), b) ** 3).sum(),
        [(2, 3), (3,)],
        (-1, 1),
    ),
    "nextafter": (lambda a, b: (lib_of(a).nextafter(a, b) ** 3).sum(), [(2, 3), (2, 3)], (-1, 1)),
    "gammainc": (
        lambda x: (
            lib_of(x).special.gammainc(constant(x, [[0.7], [2.2]]), x) ** 3
            + lib_of(x).special.gammaincc(constant(x, [1.5]), x) ** 2
        ).sum(),
        [(2, 3)],
        (0.5, 2.5),
    ),
    "zeta": (
        lambda q: (lib_of(q).special.zeta(constant(q, [[2.5], [3.5]]), q) ** 2).sum(),
        [(3,)],
        (0.5, 2),
    ),
}
# name -> (fn, input shapes, (low, high), which inputs the first derivative is taken of):
# torch has no first derivative in a, but a second through the first's formula (a sum of
# igamma, so that the output's gradient does not depend on it)
IN_ONE_INPUT = {
    "gammainc": (
        lambda a, x: lib_of(a).special.gammainc(a, x).sum(),
        [(2, 3), (3,)],
        (0.5, 2.5),
        (1,),
    ),
    "gammaincc": (lambda a, x: lib_of(a).igammac(a, x).sum(), [(3,), (2, 3)], (0.5, 2.5), (1,)),
}


def derivatives(lib, fn, values, first, weights, device="cpu"):
    """fn's first derivatives in the inputs ``first`` (create_graph=True), the gradient of
    their weighted sum (a Hessian-vector product) and of their plain sum, in every input
    (None where one does not reach it), as host arrays."""
    xs = [lib.tensor(v, device=device).requires_grad_(True) for v in values]
    grads = lib.autograd.grad(fn(*xs), [xs[i] for i in first], create_graph=True)
    weighted = sum((g * lib.tensor(weights[i], device=device)).sum() for g, i in zip(grads, first))
    hvp = lib.autograd.grad(weighted, xs, retain_graph=True, allow_unused=True)
    plain = lib.autograd.grad(sum(g.sum() for g in grads), xs, allow_unused=True)
    host = [g.detach().cpu().numpy() for g in grads]
    return host + [None if h is None else h.cpu().numpy() for h in (*hvp, *plain)]


def assert_as_torchs(fn, values, first=None, rtol=1e-9):
    first = range(len(values)) if first is None else first
    weights = arrays(*(np.shape(v) for v in values), low=-1, high=1, seed=3)
    ours = derivatives(tricycle, fn, values, first, weights)
    theirs = derivatives(torch, fn, values, first, weights)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a is None or b is None:  # an input that the derivatives do not reach: zeros
            assert not np.asarray(a if b is None else b).any(), i
            continue
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=str(i))


@pytest.mark.parametrize("name, fn, values, weights", list(drawn(CASES)), ids=sorted(CASES))
def test_first_and_second_derivatives_as_torchs(name, fn, values, weights):
    needs_torchs(name)
    assert_first_and_second_as_torchs(fn, values, weights)
    assert_as_torchs(fn, values)


@pytest.mark.parametrize("name", sorted(IN_ONE_INPUT))
def test_functions_differentiable_in_one_input_have_torchs_second_derivatives(name):
    """igamma's slope in x is a function of a too: the second derivative reaches a."""
    fn, shapes, (low, high), first = IN_ONE_INPUT[name]
    assert_as_torchs(fn, arrays(*shapes, low=low, high=high, seed=len(name)), first)


# ------------------------------------------------------------------ random shapes
# leading axes of A and B, broadcast against each other
BATCHES = [((), ()), ((2,), ()), ((), (2,)), ((2, 1), (3,))]
FLAGS = st.tuples(st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from(BATCHES), FLAGS, st.integers(0, 99))
def test_solve_triangular_for_random_shapes(n, k, batch, flags, seed):
    """Every upper/left/unitriangular, A's other triangle full of values it must not read."""
    upper, left, unitriangular = flags
    b_shape = (*batch[1], n, k) if left else (*batch[1], k, n)
    values = arrays((*batch[0], n, n), b_shape, low=-1, high=1, seed=seed)
    assert_as_torchs(triangular(upper, left, unitriangular), values)


SIZES = st.lists(st.integers(1, 4), min_size=3, max_size=3)


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(MODES), st.sampled_from([2, 3]), st.integers(0, 99), SIZES, SIZES,
    st.integers(1, 2), st.integers(1, 2),
)  # fmt: skip
def test_grid_sample_for_random_shapes(mode, dims, seed, sizes, out, N, C):
    """Grids reach past the borders (every padding mode's outside) and inside."""
    needs_torchs("grid_sample")
    x_shape, grid_shape = (N, C, *sizes[:dims]), (N, *out[:dims], dims)
    x, grid = arrays(x_shape, grid_shape, low=-1.3, high=1.3, seed=seed)
    assert_as_torchs(sampled(*mode), [x, grid])


@pytest.mark.parametrize("mode, padding_mode, align_corners", MODES)
def test_grid_sample_every_mode_as_torchs(mode, padding_mode, align_corners):
    needs_torchs("grid_sample")
    values = arrays((2, 2, 3, 4), (2, 3, 2, 2), low=-1.3, high=1.3, seed=7)
    assert_as_torchs(sampled(mode, padding_mode, align_corners), values)


def test_grid_sample_through_affine_grid_as_torchs():
    """theta -> affine_grid -> grid_sample: the second derivatives in theta and the input."""
    needs_torchs("grid_sample")

    def fn(x, theta):
        F = F_of(x)
        grid = F.affine_grid(theta, (2, 2, 3, 4), align_corners=False)
        return (F.grid_sample(x, grid, padding_mode="border", align_corners=False) ** 3).sum()

    x, theta = arrays((2, 2, 3, 4), (2, 2, 3), low=-0.8, high=0.8, seed=5)
    assert_as_torchs(fn, [x, theta])


# ------------------------------------------------------------------ higher orders
def third(lib, fn, values):
    """The gradient of the sum of fn's second derivatives (each input's HVP with ones)."""
    xs = [lib.tensor(v).requires_grad_(True) for v in values]
    grads = lib.autograd.grad(fn(*xs), xs, create_graph=True)
    seconds = lib.autograd.grad(sum(g.sum() for g in grads), xs, create_graph=True)
    return [g.detach().numpy() for g in lib.autograd.grad(sum(s.sum() for s in seconds), xs)]


@pytest.mark.parametrize("name", ["solve_triangular", "grid_sample", "i1e"])
def test_third_derivatives_as_torchs(name):
    needs_torchs(name)
    fn, shapes, (low, high) = CASES[name]
    values = arrays(*shapes, low=low, high=high, seed=2)
    for a, b in zip(third(tricycle, fn, values), third(torch, fn, values)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_grid_sample_hessian_as_torchs():
    """The full Hessian of a bilinear sample's cube in (input, grid)
    (``autograd.functional.hessian``, tricycle's and torch's)."""
    needs_torchs("grid_sample")
    x, grid = arrays((1, 1, 2, 3), (1, 2, 1, 2), low=-1.1, high=1.1, seed=4)

    def fn(x, g):
        return (F_of(x).grid_sample(x, g, align_corners=True) ** 3).sum()

    ours = tricycle.autograd.functional.hessian(fn, (tricycle.tensor(x), tricycle.tensor(grid)))
    theirs = torch.autograd.functional.hessian(fn, (torch.tensor(x), torch.tensor(grid)))
    assert ours[1][1].numpy().any()  # the grid's own block: bilinear's weights are products
    for i, j in itertools.product(range(2), range(2)):
        np.testing.assert_allclose(ours[i][j].numpy(), theirs[i][j].numpy(), 1e-9, 1e-12)


# ------------------------------------------------------------------ finite differences
def fd_inputs(shapes, low, high, seed):
    values = arrays(*shapes, low=low, high=high, seed=seed)
    return [tricycle.tensor(v, requires_grad=True) for v in values]


@pytest.mark.parametrize("flags", [(True, True, False), (False, False, True)])
def test_solve_triangular_gradgradcheck(flags):
    def fn(A, B):
        upper, left, unitriangular = flags
        return tricycle.linalg.solve_triangular(
            well_posed(A), B, upper=upper, left=left, unitriangular=unitriangular
        )

    shapes = [(2, 3, 3), (3, 2)] if flags[1] else [(3, 3), (2, 3)]
    assert tricycle.autograd.gradgradcheck(fn, fd_inputs(shapes, -1, 1, 0))


@pytest.mark.parametrize("mode, padding_mode, align_corners", BILINEAR)
def test_grid_sample_gradgradcheck(mode, padding_mode, align_corners):
    """Away from the kinks (integer source coordinates, the clamps) with probability 1."""

    def fn(x, grid):
        return tricycle.nn.functional.grid_sample(
            x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    inputs = fd_inputs([(1, 2, 3, 3), (1, 2, 2, 2)], -1.3, 1.3, 1)
    assert tricycle.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["i0e", "i1e", "gammainc", "zeta"])
def test_special_gradgradcheck(name):
    special = tricycle.special
    x = tricycle.tensor(np.array([-2.1, -0.4, 0.3, 1.7]), requires_grad=True)
    a = tricycle.tensor(np.array([0.7, 1.3, 2.2, 3.1]))
    fns = {
        "i0e": lambda x: special.i0e(x),
        "i1e": lambda x: special.i1e(x),
        "gammainc": lambda x: special.gammainc(a, x.abs()),
        "zeta": lambda x: special.zeta(a + 1, x.abs()),
    }
    assert tricycle.autograd.gradgradcheck(fns[name], (x,))


# ------------------------------------------------------------------ refusals, edges
def test_what_torch_does_not_differentiate_raises_as_torchs():
    """igamma's and zeta's first argument have no derivative, first or second."""
    for lib in (torch, tricycle):
        a = lib.tensor(np.array([1.5, 2.5]), requires_grad=True)
        x = lib.tensor(np.array([0.5, 1.5]), requires_grad=True)
        for y in (lib.special.gammainc(a, x), lib.special.zeta(a + 1, x)):
            with pytest.raises(NotImplementedError, match="input|not implemented"):
                lib.autograd.grad(y.sum(), (a, x), create_graph=True)
    x = tricycle.tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = tricycle.special.gammainc(x, tricycle.tensor(np.array([1.0, 2.0])))
    with pytest.raises(NotImplementedError, match="igamma: the derivative with respect to input"):
        tricycle.autograd.grad(y.sum(), x, create_graph=True)


def test_i1e_at_zero_and_nearest_grid_as_torchs():
    """i1e at 0 (its slope the constant 1/2 there, of derivative 0); nearest's grid gradient
    zero at every order."""
    assert_as_torchs(lambda x: (lib_of(x).special.i1e(x) ** 3).sum(), [np.array([0.0, 0.7])])
    x = tricycle.tensor(arrays((1, 1, 3, 3))[0], requires_grad=True)
    grid = tricycle.tensor(arrays((1, 2, 2, 2), low=-1, high=1)[0], requires_grad=True)
    y = tricycle.nn.functional.grid_sample(x, grid, mode="nearest")
    gx, gg = tricycle.autograd.grad((y**2).sum(), (x, grid), create_graph=True)
    assert not gg.numpy().any() and gx.numpy().any()
    hx, hg = tricycle.autograd.grad((gx**2).sum() + (gg**2).sum(), (x, grid), allow_unused=True)
    assert hx.numpy().any() and (hg is None or not hg.numpy().any())


def test_every_rule_here_is_met(monkeypatch):
    """Each slope of ``second_order_special``, grid_sample's rule and the triangular solve's
    (through ``linalg.solve``'s keys) is met by one of the cases above."""
    used = rules_met(monkeypatch, second_order_special.ONE, second_order_special.TWO)
    exercise(CASES)
    for fn, shapes, (low, high), first in IN_ONE_INPUT.values():
        derivatives(tricycle, fn, arrays(*shapes, low=low, high=high), first, arrays(*shapes))
    assert set(second_order_special.ONE) | set(second_order_special.TWO) <= used
    assert second_order_sampling.KEYS["grid_sample"] in used
    assert {second_order_final.KEYS["solve"], second_order_final.KEYS["solve[1]"]} <= used


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """Every case above with cupy arrays (the rules compute with the arrays' module)."""
    assert_on_a_gpu_as_on_the_host(drawn(CASES))

"""``tricycle.sort`` is torch.sort: the ``(values, indices)`` named tuple of ``input`` sorted
along ``dim`` (``tricycle.ops.sort`` gives the values alone), with torch's numbers forward and
backward; equal values keep their order (torch's ``stable=True``)."""

import numpy as np
import pytest

import tricycle as tc


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_gives_torchs_values_indices_and_gradient(dim, descending):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (3, 5, 4)).astype(np.float32)  # ties: the order they keep matters
    weights = rng.normal(size=x.shape).astype(np.float32)
    theirs, ours = torch.tensor(x, requires_grad=True), tc.tensor(x, requires_grad=True)
    want = torch.sort(theirs, dim=dim, descending=descending, stable=True)
    got = tc.sort(ours, dim=dim, descending=descending)
    values, indices = got  # unpacks as torch's
    assert type(got).__name__ == "sort" and got.values is values and got.indices is indices
    np.testing.assert_array_equal(values.numpy(), want.values.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())
    assert indices.dtype == np.int64 and not indices.requires_grad
    (want.values * torch.tensor(weights)).sum().backward()
    (values * tc.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_sort_positional_and_errors():
    torch = pytest.importorskip("torch")
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, 1.0]], dtype=np.float32)
    dist, order = tc.sort(tc.tensor(x), 0, True)  # torch's positional order: dim, descending
    want = torch.sort(torch.tensor(x), 0, True)
    np.testing.assert_array_equal(dist.numpy(), want.values.numpy())
    np.testing.assert_array_equal(order.numpy(), want.indices.numpy())
    values, indices = tc.sort(tc.tensor(2.0))  # a 0-d tensor: itself, at index 0
    assert values.item() == 2.0 and indices.item() == 0
    with pytest.raises(TypeError, match="sort: input"):
        tc.sort(x)
    with pytest.raises(TypeError, match="sort: out= is not supported"):
        tc.sort(tc.tensor(x), out=tc.tensor(x))
    with pytest.raises(TypeError, match="sort: stable"):
        tc.sort(tc.tensor(x), stable="yes")


def test_the_method_is_torchs_too():
    torch = pytest.importorskip("torch")
    data = np.array([[3.0, 1.0, 2.0], [0.5, 0.5, -1.0]], dtype=np.float32)
    values, indices = tc.tensor(data).sort(dim=1, descending=True)
    expected = torch.tensor(data).sort(dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_takes_torchs_keywords(descending):
    """torch.argsort(x, dim=, descending=, stable=) and the method: torch's stable ids (d2l's
    ``nms``: ``torch.argsort(scores, dim=-1, descending=True)``)."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).integers(0, 3, (4, 5)).astype(np.float32)  # ties
    for dim in 0, 1, -1:
        want = torch.argsort(torch.tensor(x), dim=dim, descending=descending, stable=True)
        for got in (
            tc.argsort(tc.tensor(x), dim=dim, descending=descending),
            tc.argsort(tc.tensor(x), dim=dim, descending=descending, stable=True),
            tc.tensor(x).argsort(dim=dim, descending=descending),
        ):
            np.testing.assert_array_equal(got.numpy(), want.numpy())

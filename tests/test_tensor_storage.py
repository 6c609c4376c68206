"""How a tensor lies in memory, and the small torch functions "Deep Learning with PyTorch"'s
first chapters call (tests/test_dlwpt_part1.py runs them), against torch:

- ``x.stride()`` (and ``stride(dim)``), ``x.storage_offset()`` and ``x.storage()`` of tensors
  and of their views (a row, a column, ``t()``, ``transpose``, ``permute``, slices, chunks);
  a storage read gives Python numbers, a write shows in every view of that memory;
- ``x.short()``: int16, truncated toward zero, no gradient (a value int16 cannot hold is an
  error here, where torch wraps it);
- ``tricycle.transpose(x, dim0, dim1)``: torch's (two axes swapped), its values and gradient;
- ``isfinite``, ``isnan``, ``isinf``: booleans, of float, integer and bool tensors, that need
  no gradient;
- ``set_printoptions``: numpy's print options (a tensor prints its array), ``profile`` and
  ``sci_mode`` as torch's; each test puts numpy's options back.
"""

import numpy as np
import pytest

import tricycle

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")

VIEWS = {  # name: a view of x (3, 4) as both libraries write it
    "x": lambda x: x,
    "row": lambda x: x[1],
    "column": lambda x: x[:, 2],
    "t": lambda x: x.t(),
    "block": lambda x: x[1:, 1:3],
    "step": lambda x: x[::2, 1:],
    "chunk": lambda x: x.chunk(2, dim=1)[1],
    "split": lambda x: x.split([1, 2], dim=0)[1],
    "3d transpose": lambda x: x.view(3, 2, 2).transpose(0, 2),
    "permute": lambda x: x.view(3, 2, 2).permute(2, 0, 1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "expand": lambda x: x[0].expand(2, 4),
}


@pytest.fixture
def numpy_print_options():
    options = np.get_printoptions()
    yield
    np.set_printoptions(**options)


def both(values):
    return tricycle.tensor(values), torch.tensor(values)


@pytest.mark.parametrize("name", VIEWS)
def test_strides_offsets_and_storages_of_views_are_torchs(name):
    ours, theirs = (VIEWS[name](x) for x in both(np.arange(12.0).reshape(3, 4).tolist()))
    assert ours.stride() == tuple(theirs.stride()), name
    assert [ours.stride(d) for d in range(-ours.ndim, ours.ndim)] == [
        theirs.stride(d) for d in range(-theirs.ndim, theirs.ndim)
    ]
    assert ours.storage_offset() == theirs.storage_offset()
    ours_storage, theirs_storage = ours.storage(), theirs.storage()
    assert len(ours_storage) == len(theirs_storage) == ours_storage.size() == 12
    assert list(ours_storage) == list(theirs_storage) == ours_storage.tolist()
    assert type(ours_storage[5]) is type(theirs_storage[5]) is float
    assert ours.is_contiguous() == theirs.is_contiguous()


def test_a_storage_write_shows_in_every_view_and_a_copy_has_its_own():
    results = []
    for x in both([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]]):
        row, column, t, clone = x[1], x[:, 1], x.t(), x.clone()
        column.storage()[3] = 9.0  # x[1, 1]: the memory every view shares
        row.storage()[0] = 7.0  # x[0, 0], though the row starts at 2
        t.storage()[4] += 0.5  # x[2, 0]
        assert x.storage().data_ptr() == t.storage().data_ptr() == row.storage().data_ptr()
        assert clone.storage().data_ptr() != x.storage().data_ptr()
        assert x.t().contiguous().storage_offset() == 0
        results.append([host(v) for v in (x, row, column, t, clone)])
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(results[0][0], [[7.0, 1.0], [5.0, 9.0], [2.5, 1.0]])


def host(value) -> np.ndarray:
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value.numpy()


def test_short_truncates_to_int16_without_a_gradient():
    values = [-1.7, -0.5, 0.0, 2.9, 300.0, -32768.0, 32767.0]
    ours = tricycle.tensor(values, requires_grad=True).short()
    theirs = torch.tensor(values, requires_grad=True).short()
    assert ours.dtype == np.int16 and theirs.dtype == torch.int16
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad and not theirs.requires_grad
    assert tricycle.tensor([3, -4]).short().tolist() == torch.tensor([3, -4]).short().tolist()
    with pytest.raises(ValueError, match=r"short.*40000.* int16"):  # torch wraps it
        tricycle.tensor([40000.0]).short()


@pytest.mark.parametrize(("shape", "dims"), [((3, 4), (0, 1)), ((2, 3, 4), (0, 2)),
                                             ((2, 3, 4), (-1, 1)), ((2, 3), (1, 1))])  # fmt: skip
def test_transpose_function_swaps_two_axes_as_torchs_forward_and_backward(shape, dims):
    x = np.random.default_rng(0).normal(size=shape)
    ours, theirs = tricycle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = tricycle.transpose(ours, *dims), torch.transpose(theirs, *dims)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    assert out.stride() == tuple(expected.stride())
    weights = np.random.default_rng(1).normal(size=out.shape)
    (out * tricycle.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("name", ["isfinite", "isnan", "isinf"])
def test_isfinite_isnan_isinf_are_torchs(name):
    for values in ([1.0, np.inf, -np.inf, np.nan, -0.0], [1, -2, 0], [True, False]):
        ours, theirs = both(values)
        for got, want in (
            (getattr(tricycle, name)(ours), getattr(torch, name)(theirs)),
            (getattr(ours, name)(), getattr(theirs, name)()),
        ):
            assert got.dtype == np.bool_ and want.dtype == torch.bool
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    leaf = tricycle.tensor([1.0, np.nan], requires_grad=True)
    assert not getattr(tricycle, name)(leaf).requires_grad
    with pytest.raises(TypeError, match=name):
        getattr(tricycle, name)(np.ones(2))


def test_set_printoptions_sets_numpys_as_torchs_profiles(numpy_print_options):
    x = tricycle.tensor([1.0 / 3.0, 2.0 / 3.0])
    try:  # the same digits as torch's under the same options
        for lib in tricycle, torch:
            lib.set_printoptions(precision=2)
        assert "0.33" in repr(x) and "0.333" not in repr(x) and "0.67" in repr(x)
        assert "0.33" in str(torch.tensor([1.0 / 3.0, 2.0 / 3.0])) and "0.67" in str(
            torch.tensor([1.0 / 3.0, 2.0 / 3.0])
        )
    finally:
        torch.set_printoptions(profile="default")
    assert np.get_printoptions()["precision"] == 2
    x = tricycle.tensor([1.0 / 3.0, 2.0e-5, 12345.678])
    tricycle.set_printoptions(edgeitems=2, linewidth=75)
    assert np.get_printoptions()["edgeitems"] == 2 and np.get_printoptions()["precision"] == 2
    tricycle.set_printoptions(threshold=5)
    assert "..." in repr(tricycle.arange(100.0))
    tricycle.set_printoptions(profile="full")
    assert "..." not in repr(tricycle.arange(2000.0))
    tricycle.set_printoptions(profile="default")
    assert np.get_printoptions()["precision"] == 8 and np.get_printoptions()["edgeitems"] == 3
    tricycle.set_printoptions(sci_mode=False)
    assert np.get_printoptions()["suppress"] is True and "e-05" not in repr(x)
    with pytest.raises(ValueError, match="set_printoptions: profile"):
        tricycle.set_printoptions(profile="long")


@pytest.mark.parametrize(
    ("shape", "args"),
    [
        ((3, 3), ()),
        ((3, 4), (1,)),
        ((4, 3), (-2,)),
        ((2, 3, 4), (0, 0, 2)),
        ((2, 3, 4), (1, -1, 1)),
    ],
)
def test_diagonal_is_a_view_where_no_graph_is_kept_as_torchs(shape, args):
    values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    results = []
    for lib in tricycle, torch:
        x = lib.tensor(values)
        d = x.diagonal(*args)
        strides, offset = tuple(d.stride()), d.storage_offset()
        d.mul_(-1)  # written into x, as x.diagonal().fill_(0) would
        copied = lib.diag(x[0] if x.ndim == 3 else x)  # diag's a copy: a write stays there
        copied.zero_()
        w = lib.tensor(values, requires_grad=True)  # in a graph: the gradient goes back
        (w.diagonal(*args) * lib.tensor(np.arange(d.shape[-1], dtype=np.float64))).sum().backward()
        results.append([host(x), host(d), strides, offset, host(w.grad)])
    ours, theirs = results
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(got, want)

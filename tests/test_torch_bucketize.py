"""``tricycle.bucketize`` and ``tricycle.searchsorted`` (``tricycle.torch_indexing``) give
torch's indices: values on, between and beyond the boundaries, ``right`` both ways (and
``side=``), integer and float inputs, ``out_int32``, a number as the input, and a sorted
sequence of rows; bad arguments are clear errors."""

import numpy as np
import pytest

import tricycle

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_bucketize_is_torchs(right, dtype):
    values = np.array([[70, 73, 74], [76, 79, 82], [60, 79, 73]], dtype)  # on and between
    boundaries = np.array([73, 76, 79], dtype)
    ours = tricycle.bucketize(tricycle.tensor(values), tricycle.tensor(boundaries), right=right)
    theirs = torch.bucketize(torch.tensor(values), torch.tensor(boundaries), right=right)
    assert ours.dtype == np.int64 and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    small = tricycle.bucketize(tricycle.tensor(values), tricycle.tensor(boundaries), out_int32=True)
    assert small.dtype == np.int32


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_is_torchs(side):
    rng = np.random.default_rng(0)
    rows = np.sort(rng.integers(0, 6, (2, 3, 5)), axis=-1).astype(np.float64)
    values = rng.integers(-1, 7, (2, 3, 4)).astype(np.float64)
    for seq, v in (rows, values), (rows[0, 0], values), (rows[0, 0], 3.0):
        given = v if isinstance(v, float) else torch.tensor(v)
        theirs = torch.searchsorted(torch.tensor(seq), given, side=side)
        ours = tricycle.searchsorted(
            tricycle.tensor(seq), v if isinstance(v, float) else tricycle.tensor(v), side=side
        )
        np.testing.assert_array_equal(np.asarray(ours.numpy()), theirs.numpy())
        right = tricycle.searchsorted(
            tricycle.tensor(seq), tricycle.tensor(v), right=side == "right"
        )
        np.testing.assert_array_equal(np.asarray(right.numpy()), theirs.numpy())


def test_bad_arguments_are_clear_errors():
    b = tricycle.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"bucketize: boundaries must be 1-D, got shape \(1, 2\)"):
        tricycle.bucketize(tricycle.tensor([1.5]), b.reshape(1, 2))
    with pytest.raises(TypeError, match="bucketize: .*boundaries.*a Tensor"):
        tricycle.bucketize(tricycle.tensor([1.5]), [1.0, 2.0])
    with pytest.raises(ValueError, match="searchsorted: side must be 'left' or 'right'"):
        tricycle.searchsorted(b, tricycle.tensor([1.5]), side="middle")
    with pytest.raises(ValueError, match="same leading axes"):
        tricycle.searchsorted(tricycle.tensor([[1.0, 2.0]]), tricycle.tensor([[1.0], [2.0]]))

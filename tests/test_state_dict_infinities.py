"""A buffer's infinities load, as torch's: llama2.c's manual attention keeps its causal mask as a
buffer of ``-inf`` above the diagonal (``torch.triu(torch.full(..., float("-inf")), 1)``), and
``load_state_dict`` (and so ``nn.from_torch``) loads it as torch does. A parameter must still be
finite, and NaN is refused everywhere: a corrupt checkpoint is still caught at the boundary."""
# ruff: noqa: E501

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn


def masked(lib):
    """A Linear and a causal ``-inf`` mask buffer, written as llama2.c writes it."""

    class Masked(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = lib.nn.Linear(4, 4, bias=False)
            mask = lib.full((1, 1, 4, 4), float("-inf"))
            self.register_buffer("mask", lib.triu(mask, diagonal=1))

        def forward(self, x):
            scores = x @ x.transpose(-2, -1) + self.mask[0, 0]
            return lib.nn.functional.softmax(scores, dim=-1) @ self.proj(x)

    return Masked()


def test_a_buffers_minus_infinity_loads_as_torchs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs, ours = masked(torch), masked(tricycle)
    state = theirs.state_dict()
    theirs.load_state_dict(state)  # torch loads its own mask
    nn.from_torch(ours, state)
    np.testing.assert_array_equal(ours.mask.numpy(), theirs.mask.numpy())
    assert np.isneginf(ours.mask.numpy()).sum() == 6
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(ours(tricycle.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)  # fmt: skip
    again = masked(tricycle)
    again.load_state_dict(ours.state_dict())  # tricycle's own state dict, round trip
    np.testing.assert_array_equal(again.mask.numpy(), ours.mask.numpy())


def test_a_parameters_infinity_and_any_nan_are_still_refused_and_change_nothing():
    model = masked(tricycle)
    before = {name: value.copy() for name, value in model.state_dict().items()}
    for name, spoil in (("proj.weights", np.inf), ("mask", np.nan), ("proj.weights", np.nan)):
        state = {key: value.copy() for key, value in before.items()}
        state[name][0, 0] = spoil
        with pytest.raises(ValueError, match=f"{name} has non-finite values"):
            model.load_state_dict(state)
    state = {key: value.copy() for key, value in before.items()}
    state["mask"] = state["mask"].astype(np.float64)
    state["mask"][0, 0, 0, 0] = 1e300  # finite, but too large for float32: refused
    with pytest.raises(ValueError, match=r"mask has values too large for float32 \(largest magnitude 1e\+300\)"):  # fmt: skip
        model.load_state_dict(state)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[key])

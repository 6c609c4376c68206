"""check_finite: one global norm clears a healthy model; a non-finite norm names the culprit,
or is cleared when it only overflowed float32."""

import numpy as np
import pytest

from tricycle.apps.step import TrainingDiverged
from tricycle.apps.validation import check_finite
from tricycle.layers import Dense, Sequential
from tricycle.optimisers import AdamW


def model_and_optimiser():
    model = Sequential(Dense(3, 4), Dense(4, 2))
    optimiser = AdamW(learning_rate=1e-3)
    for p in model.parameters():
        optimiser.state[id(p)] = {"exp_avg": np.zeros_like(p.array), "step": 1}
    return model, optimiser


def test_a_finite_model_passes():
    model, optimiser = model_and_optimiser()
    check_finite(model, optimiser)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_parameter_is_named(bad):
    model, _ = model_and_optimiser()
    name, p = list(model.named_parameters())[1]
    p.array[0, ...] = bad
    with pytest.raises(TrainingDiverged, match=f"parameter {name} holds inf or NaN"):
        check_finite(model)


def test_a_non_finite_optimiser_slot_is_named():
    model, optimiser = model_and_optimiser()
    key = next(iter(optimiser.state))
    optimiser.state[key]["exp_avg"][...] = np.nan
    with pytest.raises(TrainingDiverged, match=f"optimiser exp_avg of {key} holds inf"):
        check_finite(model, optimiser)


def test_huge_finite_values_overflow_the_norm_but_pass():
    model, _ = model_and_optimiser()
    for p in model.parameters():
        p.array[...] = np.float32(3e38)  # the sum of squares is inf in float32
    check_finite(model)

"""torch.distributed.checkpoint (tricycle/parallel/checkpoint_sharded.py): save and load in a
world of one, the state_dict calls, refusals; then two ranks under mpiexec train an FSDP
model with AdamW, save its sharded state, load it into a fully_shard model (another layout)
there, and one process loads the same files into the plain model and optimizer: both equal
one process trained on the whole batch.

Run as a script (``mpiexec -n 2 python tests/test_dcp.py DIR``) this file is the ranks'
program: they save to DIR/ckpt and rank 0 pickles what they saw to DIR/ranks.pkl."""

import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.distributed.checkpoint as dcp
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import run_ranks, write_from_rank_0
from tests.test_distributed import needs_mpi
from tests.test_fsdp import Net, batch, wrapped
from tricycle.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)
from tricycle.parallel import distributed as world_module
from tricycle.random import manual_seed
from tricycle.tensor import Tensor


@pytest.fixture(autouse=True)
def alone():
    dist.destroy_process_group()


def steps(model, x, y):
    """test_fsdp's three AdamW steps; returns the optimizer."""
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    for _ in range(3):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return opt


def trained():
    """The model and optimizer of one process on the whole batch."""
    manual_seed(0)
    model = Net()
    return model, steps(model, *batch())


def fresh():
    manual_seed(1)
    model = Net()
    return model, optim.AdamW(model.parameters(), lr=0.9)


def assert_same(model, opt, ref_model, ref_opt):
    for name, value in ref_model.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name], value, rtol=2e-5, atol=2e-6,
                                   err_msg=name)  # fmt: skip
    got, want = opt.state_dict(), ref_opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    for i, slots in want["state"].items():
        assert got["state"][i]["step"] == slots["step"]
        for slot in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(got["state"][i][slot], slots[slot], rtol=1e-4, atol=1e-7)


def test_a_world_of_one_saves_and_loads(tmp_path):
    model, opt = trained()
    model_sd, optim_sd = get_state_dict(model, opt)
    assert (
        "inp.weights" in optim_sd["state"]
        and optim_sd["param_groups"][0]["params"][0] == "inp.weights"
    )
    dcp.save({"model": model_sd, "optim": optim_sd, "step": 3}, checkpoint_id=tmp_path / "c")
    assert sorted(os.listdir(tmp_path / "c")) == [".metadata", "__0_0.distcp"]
    other, other_opt = fresh()
    assert not other_opt.state
    model_sd, optim_sd = get_state_dict(other, other_opt)  # its slots made, as torch's
    assert optim_sd["state"]["out.bias"]["exp_avg"].tolist() == [0.0]
    np.testing.assert_array_equal(
        other.state_dict()["out.bias"], fresh()[0].state_dict()["out.bias"]
    )
    state = {"model": model_sd, "optim": optim_sd, "step": 0}
    with pytest.raises(dcp.CheckpointException, match="missing key in checkpoint"):
        dcp.load({"other": np.zeros(2)}, checkpoint_id=tmp_path / "c")
    reader = dcp.FileSystemReader(tmp_path / "c")
    dcp.load(state, storage_reader=reader)
    assert state["step"] == 3
    set_state_dict(
        other, other_opt, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    assert_same(other, other_opt, model, opt)


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="save: give checkpoint_id"):
        dcp.save({"a": np.zeros(2)})
    with pytest.raises(TypeError, match="save: state_dict must be a dict"):
        dcp.save([np.zeros(2)], checkpoint_id=tmp_path)
    with pytest.raises(dcp.CheckpointException, match="holds no checkpoint"):
        dcp.load({"a": np.zeros(2)}, checkpoint_id=tmp_path / "none")
    dcp.save({"a": np.zeros(2)}, storage_writer=dcp.FileSystemWriter(tmp_path / "w"))
    with pytest.raises(dcp.CheckpointException, match=r"\('a',\) is \(3,\)"):
        dcp.load({"a": np.zeros(3)}, checkpoint_id=tmp_path / "w")
    with pytest.raises(NotImplementedError, match="save: planner must be None"):
        dcp.save({"a": np.zeros(2)}, checkpoint_id=tmp_path / "p", planner=object())
    with pytest.raises(NotImplementedError, match="broadcast_from_rank0"):
        get_model_state_dict(Net(), options=StateDictOptions(broadcast_from_rank0=True))


# ====================================================================== two ranks
@needs_mpi
def test_a_checkpoint_of_two_ranks_loads_in_one_process(tmp_path):
    run_ranks(__file__, tmp_path)
    assert sorted(os.listdir(tmp_path / "ckpt")) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    model, opt = trained()  # one process on the whole batch
    got = pickle.loads((tmp_path / "ranks.pkl").read_bytes())
    for rank in range(2):  # loaded at two ranks into row shards: the same full state
        for name, value in model.state_dict().items():
            np.testing.assert_allclose(got[rank][name], value, rtol=2e-5, atol=2e-6, err_msg=name)
    for rank in range(2):  # a group of one: its rank 0 writes the index and its file
        assert sorted(os.listdir(tmp_path / f"alone{rank}")) == [".metadata", "__0_0.distcp"]
        own = {"own": np.zeros(3)}
        dcp.load(own, checkpoint_id=tmp_path / f"alone{rank}")
        np.testing.assert_array_equal(own["own"], [rank] * 3)
        np.testing.assert_array_equal(got[rank]["both"], np.arange(4.0))
    assert sorted(os.listdir(tmp_path / "both")) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    other, other_opt = fresh()
    state = {
        "model": get_model_state_dict(other),
        "optim": get_optimizer_state_dict(other, other_opt),
    }
    dcp.load(state, checkpoint_id=tmp_path / "ckpt")
    set_state_dict(
        other, other_opt, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    assert_same(other, other_opt, model, opt)


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x, y = batch()
    rows = slice(4 * rank, 4 * rank + 4)
    model = wrapped("FULL_SHARD")
    opt = steps(model, x[rows], y[rows])
    model_sd, optim_sd = get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=Path(out) / "ckpt")
    rows_model = wrapped("fully_shard")  # another layout: each parameter's rows
    state = {"model": get_model_state_dict(rows_model)}
    dcp.load(state, checkpoint_id=Path(out) / "ckpt")
    set_model_state_dict(rows_model, state["model"])
    full = get_model_state_dict(rows_model, options=StateDictOptions(full_state_dict=True))
    alone, _ = dist.new_subgroups(1)  # each rank's group of one, then one of both
    dcp.save({"own": np.full(3, float(rank))}, checkpoint_id=Path(out) / f"alone{rank}",
             process_group=alone)  # fmt: skip
    both, _ = dist.new_subgroups(2)
    dcp.save({"w": np.arange(4.0), "rank": 0}, checkpoint_id=Path(out) / "both",
             process_group=both)  # fmt: skip
    loaded = {"w": np.zeros(4), "rank": None}
    dcp.load(loaded, checkpoint_id=Path(out) / "both", process_group=both)
    full["both"] = loaded["w"]
    write_from_rank_0(full, Path(out) / "ranks.pkl")


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])

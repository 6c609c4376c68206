"""``tricycle.save`` and ``tricycle.load`` (``tricycle.serialization``): a model's and an
optimizer's state and a whole checkpoint round-trip, through paths, ``os.PathLike`` and file
objects; writes are atomic; ``weights_only=True`` loads state dicts and refuses any other
global (a malicious pickle) and torch's files, clearly, unless listed in torch's
``safe_globals`` (a whole model); ``map_location`` places arrays."""

import collections
import io
import os
import pickle

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle import backend
from tricycle.serialization import LoadError


def trained():
    """A model and its AdamW after one step: the states a checkpoint holds."""
    tc.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    optimizer = optim.AdamW(model.parameters(), lr=1e-2)
    model(tc.randn(5, 3)).sum().backward()
    optimizer.step()
    return model, optimizer


def assert_same(a, b):
    """Equal nested containers of arrays, tensors and plain values, of the same types."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, tc.Tensor):
        assert a.dtype == b.dtype and a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def test_a_model_and_optimizer_resume_from_a_checkpoint(tmp_path):
    model, optimizer = trained()
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 3}
    path = tmp_path / "checkpoint.pt"
    tc.save(checkpoint, path)
    loaded = tc.load(path)
    assert_same(loaded, checkpoint)

    fresh, fresh_optimizer = trained()
    with tc.no_grad():
        for p in fresh.parameters():
            p.fill_(0.0)
    fresh.load_state_dict(loaded["model"])
    fresh_optimizer.load_state_dict(loaded["optimizer"])
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[key], value)
    x = tc.randn(5, 3)
    for m, o in ((model, optimizer), (fresh, fresh_optimizer)):  # the same next step
        o.zero_grad()
        m(x).sum().backward()
        o.step()
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[key], value)


def test_tensors_stay_tensors_and_every_kind_of_state_value_round_trips(tmp_path):
    data = collections.OrderedDict(
        tensor=tc.Tensor([1.0, 2.0], requires_grad=True),
        parameter=nn.Parameter(tc.ones(2)),
        ints=np.arange(4, dtype=np.int32).reshape(2, 2),
        flags=np.array([True, False]),
        half=np.ones(3, dtype=np.float16),
        empty=np.zeros((0, 3)),
        strided=np.arange(12.0).reshape(3, 4)[:, ::2],
        scalars=(np.float32(1.5), np.int64(3), 2, 2.5, 1j, "text", b"bytes", None, True),
        sets=[{1, 2}, frozenset({"a"})],
    )
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        tc.save(data, tmp_path / "all.pt", pickle_protocol=protocol)
        loaded = tc.load(tmp_path / "all.pt")
        assert type(loaded["parameter"]) is nn.Parameter and loaded["tensor"].args is None
        assert loaded["tensor"].grad is None and loaded["sets"] == data["sets"]
        assert_same({k: v for k, v in loaded.items() if k != "sets"},
                    {k: v for k, v in data.items() if k != "sets"})  # fmt: skip


def test_an_op_output_saves_its_data_without_its_graph(tmp_path):
    x = tc.ones(3, requires_grad=True)
    y = (x * 2).sum()
    tc.save({"loss": y}, str(tmp_path / "loss.pt"))  # a str path, as torch's
    loaded = tc.load(os.fspath(tmp_path / "loss.pt"))["loss"]
    assert loaded.item() == 6.0 and loaded.args is None


def test_file_objects_and_path_likes(tmp_path):
    model, _ = trained()
    buffer = io.BytesIO()
    tc.save(model.state_dict(), buffer)
    buffer.seek(0)
    assert_same(tc.load(buffer), model.state_dict())
    with open(tmp_path / "m.pt", "wb") as f:
        tc.save([1, 2], f)
    with open(tmp_path / "m.pt", "rb") as f:
        assert tc.load(f) == [1, 2]

    class Unseekable(io.RawIOBase):
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    assert tc.load(Unseekable((tmp_path / "m.pt").read_bytes())) == [1, 2]
    with pytest.raises(TypeError, match="save: f must be a path or a binary file object"):
        tc.save({}, 3)
    with pytest.raises(TypeError, match="load: f must be a path or a binary file object"):
        tc.load(3)
    with pytest.raises(FileNotFoundError):
        tc.load(tmp_path / "missing.pt")


def test_a_file_cut_short_or_of_another_format_is_refused_clearly(tmp_path):
    tc.save({"weights": np.ones(100)}, tmp_path / "m.pt")
    data = (tmp_path / "m.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.pt").write_text("not a pickle")
    (tmp_path / "empty.pt").write_bytes(b"")
    for name in ("cut.pt", "text.pt", "empty.pt"):
        for weights_only in (True, False):
            with pytest.raises(LoadError, match=f"load: .*{name} is not a complete file"):
                tc.load(tmp_path / name, weights_only=weights_only)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "m.pt"
    tc.save({"step": 1}, path)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        tc.save({"step": 2, "bad": lambda: None}, path)  # a lambda does not pickle
    assert tc.load(path) == {"step": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


class Exploit:
    """What a malicious pickle holds: loading it calls os.system."""

    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_weights_only_refuses_any_other_global(tmp_path, monkeypatch):
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"weights": np.ones(2), "x": Exploit()}))
    called = []
    monkeypatch.setattr(os, "system", lambda command: called.append(command))
    with pytest.raises(LoadError, match=r"holds the global (posix|os|nt)\.system.*weights_only=Fa"):
        tc.load(path)
    assert called == []  # refused before anything ran
    with pytest.raises(pickle.UnpicklingError):  # what a torch script catches
        tc.load(path)
    with pytest.raises(ValueError):  # and what tricycle's bad inputs raise
        tc.load(path)
    model = nn.Linear(2, 2)
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(model))
    with pytest.raises(LoadError, match=r"holds the global tricycle\.[a-z.]+\.[A-Z]"):
        tc.load(tmp_path / "model.pkl")
    whole = tc.load(tmp_path / "model.pkl", weights_only=False)  # trusted: plain pickle
    assert_same(whole.state_dict(), model.state_dict())
    with pytest.raises(TypeError, match="load: weights_only must be True or False"):
        tc.load(path, weights_only=None)


class Recurrent(nn.Module):
    """A user's model class (at module level, where pickle finds it)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(3, 4, 2, dropout=0.1)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 1)
        self.decoder = nn.Linear(4, 2)

    def forward(self, x):
        return self.decoder(self.encoder(self.rnn(x)[0]))


def test_a_whole_model_loads_once_its_classes_are_safe_globals(tmp_path):
    """pytorch/examples' word_language_model: ``torch.save(model, f)``, then ``torch.load(f)``
    inside ``torch.serialization.safe_globals`` of the model's classes under torch's module
    paths (``torch.nn.modules.rnn.LSTM``, ``torch.nn.functional.relu``, ...)."""
    tc.manual_seed(0)
    model, path = Recurrent(), tmp_path / "model.pt"
    tc.save(model, path)
    with pytest.raises(LoadError, match=r"global [a-z_.]*Recurrent, .*safe_globals\(\[\.\.\.\]\)"):
        tc.load(path)
    modules = nn.modules
    listed = [Recurrent, modules.rnn.LSTM, modules.dropout.Dropout, modules.linear.Linear,
              modules.linear.NonDynamicallyQuantizableLinear, modules.normalization.LayerNorm,
              modules.activation.MultiheadAttention, modules.container.ModuleList,
              modules.transformer.TransformerEncoder, modules.transformer.TransformerEncoderLayer,
              nn.functional.relu]  # fmt: skip
    assert modules.rnn.LSTM is nn.LSTM and modules.linear.Linear is nn.Linear
    with tc.serialization.safe_globals(listed):
        loaded = tc.load(path)
        assert {id(g) for g in tc.serialization.get_safe_globals()} == {id(g) for g in listed}
    assert tc.serialization.get_safe_globals() == []  # the block's list ends with it
    with pytest.raises(LoadError, match="Recurrent"):
        tc.load(path)
    assert_same(loaded.state_dict(), model.state_dict())
    x = tc.randn(5, 2, 3)
    loaded.eval(), model.eval()
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
    tc.serialization.add_safe_globals(
        [(Recurrent, f"{Recurrent.__module__}.Recurrent"), *listed[1:]]
    )
    try:
        assert type(tc.load(path)) is Recurrent  # until cleared
    finally:
        tc.serialization.clear_safe_globals()
    with pytest.raises(TypeError, match="add_safe_globals: an entry must be a class or function"):
        tc.serialization.safe_globals([3])
    with pytest.raises(TypeError, match=r"add_safe_globals: an entry must be \(object, "):
        tc.serialization.add_safe_globals([(Recurrent, "Recurrent")])


def test_files_that_torch_wrote_are_refused_clearly(tmp_path):
    torch = pytest.importorskip("torch")
    state = {"weight": torch.ones(2, 3), "bias": torch.zeros(2)}
    torch.save(state, tmp_path / "torch.pt")
    for weights_only in (True, False):
        with pytest.raises(LoadError, match="PyTorch checkpoint .*zip.*v.numpy()"):
            tc.load(tmp_path / "torch.pt", weights_only=weights_only)
    torch.save(state, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(LoadError, match="PyTorch file .*legacy"):
        tc.load(tmp_path / "legacy.pt")
    np.savez(tmp_path / "arrays.npz", a=np.ones(2))
    with pytest.raises(LoadError, match="zip archive .*numpy.load"):
        tc.load(tmp_path / "arrays.npz")
    converted = {k: v.numpy() for k, v in torch.load(tmp_path / "torch.pt").items()}
    tc.save(converted, tmp_path / "converted.pt")  # the way the message gives
    assert_same(tc.load(tmp_path / "converted.pt"), converted)


def test_map_location(tmp_path, monkeypatch):
    model, optimizer = trained()
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "tensor": tc.ones(2), "layer": nn.Linear(2, 1)}  # fmt: skip
    tc.save(checkpoint, tmp_path / "c.pt")
    for location in (None, "cpu"):
        loaded = tc.load(tmp_path / "c.pt", map_location=location, weights_only=False)
        assert loaded["tensor"].device == "cpu"
    with pytest.raises(TypeError, match="load: map_location must be None, 'cpu'"):
        tc.load(tmp_path / "c.pt", map_location=lambda storage, location: storage)
    with pytest.raises(ValueError, match="map_location"):
        tc.load(tmp_path / "c.pt", map_location="tpu")
    if not backend.cupy_available():
        with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
            tc.load(tmp_path / "c.pt", map_location="cuda", weights_only=False)

    class OnDevice(np.ndarray):
        """A host array that says which GPU the fake copy went to."""

    moves = []

    def to_device(array, device):
        moves.append(device)
        moved = np.asarray(array).view(OnDevice)
        moved.gpu = device
        return moved

    monkeypatch.setattr(backend, "to_device_array", to_device)  # every move goes through it
    monkeypatch.setattr(backend, "cupy_available", lambda: True)
    loaded = tc.load(tmp_path / "c.pt", map_location="cuda:1", weights_only=False)
    state = loaded["optimizer"]["state"][0]
    arrays = [*loaded["model"].values(), state["exp_avg"], loaded["tensor"].array,
              loaded["layer"].weights.array]  # fmt: skip
    assert all(isinstance(a, OnDevice) and a.gpu == 1 for a in arrays)
    assert loaded["optimizer"]["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert loaded["optimizer"]["param_groups"] == optimizer.state_dict()["param_groups"]
    torch = pytest.importorskip("torch")
    moves.clear()
    tc.load(tmp_path / "c.pt", map_location=torch.device("cuda", 0), weights_only=False)
    assert moves and set(moves) == {0}


def test_gpu_arrays_are_written_as_host_arrays(tmp_path, monkeypatch):
    class DeviceArray:
        """A stand-in for a cupy array: a local class, which pickle cannot write itself."""

        def __init__(self, host):
            self.host = host

    monkeypatch.setattr(backend, "is_cupy_array", lambda a: isinstance(a, DeviceArray))
    monkeypatch.setattr(backend, "to_host_array", lambda a: getattr(a, "host", a))
    on_gpu = {"weights": DeviceArray(np.arange(6.0).reshape(2, 3)), "step": 1}
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        tc.save(on_gpu, tmp_path / "gpu.pt", pickle_protocol=protocol)
        assert_same(tc.load(tmp_path / "gpu.pt"), {"weights": on_gpu["weights"].host, "step": 1})

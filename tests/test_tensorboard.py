"""tricycle.utils.tensorboard.SummaryWriter: TensorBoard event files written with no tensorboard
or protobuf package. Our files are read back with a reader written here (TFRecord framing
with a bitwise CRC32C, a generic protobuf decoder, PNG through zlib), and, where tensorboard
and torch are installed, compared with torch's SummaryWriter's files: the same events (every
field but the wall time), the same tags, steps, values, histograms and pixels through
tensorboard's EventAccumulator. Also the Accelerator's ``log_with="tensorboard"``."""

import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import tricycle as tc
from tricycle.apps.accelerator import Accelerator
from tricycle.utils.tensorboard import SummaryWriter, proto, records
from tricycle.utils.tensorboard.images import encode_png


# --- our own reader -----------------------------------------------------------------------
def bitwise_crc32c(payload: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in payload:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(payload: bytes) -> int:
    crc = bitwise_crc32c(payload)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32


def read_records(path) -> list[bytes]:
    blob, out, at = Path(path).read_bytes(), [], 0
    while at < len(blob):
        header = blob[at : at + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", blob[at + 8 : at + 12])[0] == masked(header)
        payload = blob[at + 12 : at + 12 + length]
        assert struct.unpack("<I", blob[at + 12 + length : at + 16 + length])[0] == masked(payload)
        out.append(payload)
        at += 16 + length
    return out


def read_varint(blob: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = blob[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def decode(blob: bytes) -> dict[int, list]:
    """A message as field number -> raw values (ints, 8/4 bytes, or bytes)."""
    fields: dict[int, list] = {}
    at = 0
    while at < len(blob):
        key, at = read_varint(blob, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(blob, at)
        elif wire == 1:
            value, at = blob[at : at + 8], at + 8
        elif wire == 5:
            value, at = blob[at : at + 4], at + 4
        else:
            length, at = read_varint(blob, at)
            value, at = blob[at : at + length], at + length
        fields.setdefault(number, []).append(value)
    return fields


def f64(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def event_files(folder) -> list[Path]:
    return sorted(Path(folder).glob("events.out.tfevents.*"))


def summaries(folder) -> list[tuple[int | None, dict]]:
    """(step, Summary.Value fields) of each summary event of the one event file in folder."""
    (path,) = event_files(folder)
    out = []
    for payload in read_records(path):
        event = decode(payload)
        for value in decode(event.get(5, [b""])[0]).get(1, []):
            out.append((event.get(2, [None])[0], decode(value)))
    return out


def read_png(blob: bytes) -> np.ndarray:
    assert blob[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(blob):
        (length,) = struct.unpack(">I", blob[at : at + 4])
        kind, body = blob[at + 4 : at + 8], blob[at + 8 : at + 8 + length]
        assert struct.unpack(">I", blob[at + 8 + length : at + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[colour]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and not rows[:, 0].any()  # filter "none" on every row
    return rows[:, 1:].reshape(height, width, channels)


# --- the pieces -----------------------------------------------------------------------------
def test_crc32c_and_records(tmp_path):
    assert records.crc32c(b"123456789") == 0xE3069283  # the CRC32C check value
    payload = os.urandom(300)
    assert records.crc32c(payload) == bitwise_crc32c(payload)
    (tmp_path / "records").write_bytes(records.frame(payload) + records.frame(b""))
    assert read_records(tmp_path / "records") == [payload, b""]


def test_protobuf_fields():
    assert proto.varint(300) == b"\xac\x02"
    assert proto.varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1: ten bytes
    message = (
        proto.integer(2, -5) + proto.double(1, 0.5) + proto.data(3, "é") + proto.single(4, 2.0)
    )
    fields = decode(message)
    assert fields[2] == [2**64 - 5] and f64(fields[1][0]) == 0.5
    assert fields[3] == ["é".encode()] and struct.unpack("<f", fields[4][0]) == (2.0,)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trips(channels):
    pixels = np.random.default_rng(channels).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    assert np.array_equal(read_png(encode_png(pixels)), pixels)
    Image = pytest.importorskip("PIL.Image")
    import io  # noqa: PLC0415

    decoded = np.array(Image.open(io.BytesIO(encode_png(pixels))))
    assert np.array_equal(decoded.reshape(pixels.shape), pixels)


# --- the writer, read back by our reader ----------------------------------------------------
def test_scalars_histograms_text_images_read_back(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=500)
    image = rng.random((3, 6, 4)).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalar("loss", tc.tensor(1.0 / (step + 1)), step)
        writer.add_histogram("weights", tc.tensor(values), 7, bins=[-4, -1, 0, 1, 2, 10])
        writer.add_text("note", "hello", 8)
        writer.add_image("picture", image, 9)
        writer.add_scalar(
            "scalar_tensor", np.float64(2.5), 10, new_style=True, double_precision=True
        )
    got = summaries(tmp_path)
    scalars = [(s, v[1][0], struct.unpack("<f", v[2][0])[0]) for s, v in got[:3]]
    assert scalars == [
        (0, b"loss", 1.0),
        (1, b"loss", np.float32(0.5)),
        (2, b"loss", np.float32(1 / 3)),
    ]
    step, value = got[3]
    histo = decode(value[5][0])
    counts, limits = np.histogram(values, [-4, -1, 0, 1, 2, 10])
    assert step == 7 and f64(histo[3][0]) == 500 and np.isclose(f64(histo[4][0]), values.sum())
    assert f64(histo[1][0]) == values.min() and np.isclose(f64(histo[5][0]), values @ values)
    assert np.array_equal(np.frombuffer(histo[6][0], "<f8"), limits)
    assert np.array_equal(np.frombuffer(histo[7][0], "<f8"), [0, *counts])  # the left edge
    step, value = got[4]
    tensor = decode(value[8][0])
    assert (step, value[1], tensor[8], tensor[1]) == (8, [b"note/text_summary"], [b"hello"], [7])
    assert decode(decode(value[9][0])[1][0])[1] == [b"text"]
    step, value = got[5]
    picture = decode(value[4][0])
    assert (step, picture[1], picture[2], picture[3]) == (9, [6], [4], [3])
    expected = (image.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    assert np.array_equal(read_png(picture[4][0]), expected)
    step, value = got[6]
    assert step == 10 and np.frombuffer(decode(value[8][0])[6][0], "<f8").tolist() == [2.5]


def test_add_scalars_writes_a_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalars("train/loss", {"a": 1.0, "b": 2.0}, 3)
        writer.add_scalars("train/loss", {"a": 0.5}, 4)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "train_loss_a",
        "train_loss_b",
    ]
    rows = [
        (s, v[1][0], struct.unpack("<f", v[2][0])[0])
        for s, v in summaries(tmp_path / "train_loss_a")
    ]
    assert rows == [(3, b"train/loss", 1.0), (4, b"train/loss", 0.5)]
    assert summaries(tmp_path) == []  # the main run holds only its version event


def test_file_version_purge_step_queue_and_reopening(tmp_path, monkeypatch):
    writer = SummaryWriter(tmp_path, purge_step=5, max_queue=3, filename_suffix=".x")
    (path,) = event_files(tmp_path)
    assert path.name.endswith(".x") and f".{os.getpid()}." in path.name
    first = [decode(r) for r in read_records(path)]
    assert first[0][3] == [b"brain.Event:2"] and len(first) == 1  # purge events still queued
    writer.add_scalar("x", 1.0, 6)  # the third pending event: the queue is written out
    events = [decode(r) for r in read_records(path)]
    assert events[1][2] == [5] and events[1][3] == [b"brain.Event:2"]
    assert events[2][2] == [5] and decode(events[2][7][0])[1] == [1]  # SessionLog.START
    writer.add_scalar("x", 2.0, 7)
    assert len(read_records(path)) == 4  # pending until flush
    writer.flush()
    assert len(read_records(path)) == 5
    writer.close()
    writer.close()  # a second close does nothing
    writer.add_scalar("x", 3.0, 8)  # opens a new file, without the purge events again
    writer.close()
    newer = [p for p in event_files(tmp_path) if p != path]
    assert len(newer) == 1 and [decode(r).get(2) for r in read_records(newer[0])] == [None, [8]]
    monkeypatch.chdir(tmp_path)
    default = SummaryWriter(comment="_lr0.1")
    default.close()
    assert Path(default.get_logdir()).parent == Path("runs")
    assert default.get_logdir().endswith("_lr0.1") and event_files(default.get_logdir())


def test_hparams_and_figures(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "opt": "adam", "skip": None}, {"acc": 0.75}, run_name="hp")
        figure = plt.figure(figsize=(2, 1), dpi=20)
        plt.plot([0, 1], [1, 0])
        writer.add_figure("curve", figure, 1)
    assert not plt.fignum_exists(figure.number)  # closed after drawing
    tags = [v[1][0] for _, v in summaries(tmp_path / "hp")]
    assert tags == [b"_hparams_/experiment", b"_hparams_/session_start_info",
                    b"_hparams_/session_end_info", b"acc"]  # fmt: skip
    start = decode(decode(decode(decode(summaries(tmp_path / "hp")[1][1][9][0])[1][0])[2][0])[3][0])
    entries = {decode(e)[1][0]: decode(decode(e)[2][0]) for e in start[1]}
    assert (
        f64(entries[b"lr"][2][0]) == 0.1 and entries[b"opt"][3] == [b"adam"] and len(entries) == 2
    )
    ((_, value),) = summaries(tmp_path)
    assert read_png(decode(value[4][0])[4][0]).shape == (20, 40, 3)


def test_refusals(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(NotImplementedError, match="add_graph: tricycle has no TorchScript"):
            writer.add_graph(tc.nn.Linear(2, 2), tc.zeros(1, 2))
        with pytest.raises(AssertionError, match="add_scalar: 'x' needs one value, got 2"):
            writer.add_scalar("x", np.array([1.0, 2.0]))
        with pytest.raises(AssertionError, match="does not match dataformats 'CHW'"):
            writer.add_image("x", np.zeros((4, 4)))
        with pytest.raises(ValueError, match="add_histogram: 'x' has no values"):
            writer.add_histogram("x", np.zeros(0))
        with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionaries"):
            writer.add_hparams([("lr", 1)], {})
        with pytest.raises(ValueError, match="'f' should be an int, float, str, bool or Tensor"):
            writer.add_hparams({"f": [1]}, {})
        with pytest.raises(NotImplementedError, match="expected a tricycle Tensor, numpy array"):
            writer.add_scalar("x", [1.0])


def test_accelerator_logs_to_tensorboard(tmp_path):
    accelerator = Accelerator(
        log_with="tensorboard",
        project_dir=tmp_path,
        project_name="p",
        config={"lr": 0.5},
        device="cpu",
    )
    accelerator.log({"loss": 2.0, "note": "x", "parts": {"a": 1.0}}, step=4)
    accelerator.end_training()
    rows = {v[1][0]: (s, v) for s, v in summaries(tmp_path / "p")}
    assert rows[b"loss"][0] == 4 and struct.unpack("<f", rows[b"loss"][1][2][0]) == (2.0,)
    assert decode(rows[b"note/text_summary"][1][8][0])[8] == [b"x"]
    assert [s for s, _ in summaries(tmp_path / "p" / "parts_a")] == [4]
    (hparams_run,) = [p for p in (tmp_path / "p").iterdir() if p.is_dir() and p.name != "parts_a"]
    assert summaries(hparams_run)[0][1][1] == [b"_hparams_/experiment"]


# --- against torch's writer, read by tensorboard -------------------------------------------
def write_both(tmp_path, torch, write) -> tuple[Path, Path]:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: PLC0415

    for folder, writer_type, lib in (("ours", SummaryWriter, tc), ("torch", TorchWriter, torch)):
        with writer_type(tmp_path / folder) as writer:
            write(writer, lib)
    return tmp_path / "ours", tmp_path / "torch"


def all_events(folder: Path):
    """Every event of every file under folder, by sub-directory, parsed by tensorboard's
    protobuf classes, less the wall time and the writer's name, each image's PNG bytes (PIL
    encodes differently) replaced by its pixels, the hparams plugin's content parsed (a map's
    entries may come in any order)."""
    from tensorboard.compat.proto.event_pb2 import Event  # noqa: PLC0415
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: PLC0415

    out = {}
    for path in sorted(folder.rglob("events.out.tfevents.*")):
        events = []
        for payload in read_records(path):
            event = Event.FromString(payload)
            event.ClearField("wall_time")
            event.ClearField("source_metadata")
            pixels = []
            for value in event.summary.value:
                if value.HasField("image"):
                    pixels.append(read_png_any(value.image.encoded_image_string))
                    value.image.ClearField("encoded_image_string")
                plugin = value.metadata.plugin_data
                if plugin.plugin_name == "hparams":
                    pixels.append(HParamsPluginData.FromString(plugin.content))
                    plugin.ClearField("content")
            events.append((event, pixels))
        out[str(path.parent.relative_to(folder))] = events
    return out


def test_the_same_events_as_torchs_writer(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    rng = np.random.default_rng(1)
    values, image = rng.normal(size=300), rng.random((2, 3, 5, 4))
    grey = rng.integers(0, 256, (6, 5), dtype=np.uint8)

    def write(writer, lib):
        for step in range(3):
            writer.add_scalar("loss", lib.tensor(0.1 * step), step)
        writer.add_scalar("styled", 1.5, 3, new_style=True)
        writer.add_scalars("group", {"a": 1.0, "b": -2.0}, 4)
        writer.add_histogram("h", lib.tensor(values), 5)
        writer.add_histogram("auto", values, 5, bins="auto", max_bins=6)
        writer.add_histogram_raw("raw", 0, 3, 4, 6, 14, [1.0, 2.0, 3.0], [1, 2, 1], 5)
        writer.add_text("t", "**bold** text", 6)
        writer.add_image("one", image[0], 7)
        writer.add_image("grey", grey, 7, dataformats="HW")
        writer.add_images("batch", lib.tensor(image), 7)
        writer.add_images("hwc", image.transpose(0, 2, 3, 1), 7, dataformats="NHWC")
        writer.add_hparams(
            {"lr": 0.01, "opt": "sgd", "n": 3}, {"m": 0.5}, {"opt": ["sgd", "adam"]}, "hp"
        )

    ours, theirs = write_both(tmp_path, torch, write)
    ours_events, their_events = all_events(ours), all_events(theirs)
    assert sorted(ours_events) == [".", "group_a", "group_b", "hp"] == sorted(their_events)
    for run in ours_events:
        assert len(ours_events[run]) == len(their_events[run]), run
        for (event, pixels), (their_event, their_pixels) in zip(
            ours_events[run], their_events[run]
        ):
            assert event == their_event, run
            assert len(pixels) == len(their_pixels)
            for part, their_part in zip(pixels, their_pixels):  # pixels or hparams
                assert (
                    np.array_equal(part, their_part)
                    if isinstance(part, np.ndarray)
                    else part == their_part
                )
    assert sum(len(p) for _, p in ours_events["."]) == 4


def test_tensorboard_reads_the_same_runs(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: PLC0415

    rng = np.random.default_rng(2)
    values, image = rng.normal(size=200), rng.random((3, 4, 6))

    def write(writer, lib):
        for step in range(4):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_histogram("w", lib.tensor(values * (step + 1)), step)
        writer.add_image("im", lib.tensor(image), 4)

    ours, theirs = write_both(tmp_path, torch, write)
    a, b = (
        EventAccumulator(str(d), size_guidance={"images": 0, "histograms": 0})
        for d in (ours, theirs)
    )
    a.Reload()
    b.Reload()
    assert a.Tags() == b.Tags() and a.Tags()["scalars"] == ["loss"]
    assert [(e.step, e.value) for e in a.Scalars("loss")] == [
        (e.step, e.value) for e in b.Scalars("loss")
    ]
    assert [e.histogram_value for e in a.Histograms("w")] == [
        e.histogram_value for e in b.Histograms("w")
    ]
    (x,), (y,) = a.Images("im"), b.Images("im")
    assert (x.step, x.width, x.height) == (y.step, y.width, y.height) == (4, 6, 4)
    assert np.array_equal(read_png(x.encoded_image_string), read_png_any(y.encoded_image_string))


def read_png_any(blob: bytes) -> np.ndarray:
    """A PNG from any encoder (PIL's may filter rows), through PIL."""
    import io  # noqa: PLC0415

    return np.array(pytest.importorskip("PIL.Image").open(io.BytesIO(blob)))

"""tricycle.utils.tensorboard's second step: add_audio, add_video, add_image_with_boxes,
add_embedding, add_pr_curve(_raw), add_mesh and the custom-scalars layouts. Where torch and
tensorboard are installed, the events are compared with torch's SummaryWriter's, field by
field (tensorboard's protobuf classes; images compared by their pixels), and the projector's
files byte for byte; the GIF (torch needs moviepy for it, not installed here: its event then
holds no picture) is decoded by PIL to the frames; the WAV is read back by Python's ``wave``;
the boxes' pixels are compared with PIL's drawing of them."""

import io
import wave

import numpy as np
import pytest
from test_tensorboard import decode, read_png, read_png_any, summaries, write_both

import tricycle as tc
from tricycle.utils.tensorboard import SummaryWriter
from tricycle.utils.tensorboard.boxes import draw_box
from tricycle.utils.tensorboard.gif import encode_gif
from tricycle.utils.tensorboard.media import encode_wav, video_frames
from tricycle.utils.tensorboard.plugins import compute_curve


def gif_frames(blob: bytes) -> tuple[np.ndarray, dict]:
    Image = pytest.importorskip("PIL.Image")
    from PIL import ImageSequence  # noqa: PLC0415

    picture = Image.open(io.BytesIO(blob))
    frames = [np.array(frame.convert("RGB")) for frame in ImageSequence.Iterator(picture)]
    return np.stack(frames), picture.info


# --- the encoders ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "colours"),
    [((3, 5, 7), 200), ((2, 90, 100), 256), ((1, 150, 150), 2), ((1, 1, 1), 1)],
)
def test_gif_decodes_to_the_frames(shape, colours):
    rng = np.random.default_rng(colours)
    palette = rng.integers(0, 256, (colours, 3), dtype=np.uint8)
    frames = palette[rng.integers(0, colours, shape)]  # the big ones fill the LZW table
    decoded, info = gif_frames(encode_gif(frames, fps=5))
    assert np.array_equal(decoded, frames)
    assert info["duration"] == 200 and info["loop"] == 0


def test_gif_of_many_colours_takes_the_nearest_of_332_levels():
    frames = np.random.default_rng(0).integers(0, 256, (2, 20, 30, 3), dtype=np.uint8)
    decoded, _ = gif_frames(encode_gif(frames))
    error = np.abs(decoded.astype(int) - frames)
    assert error[..., :2].max() <= 255 / 7 / 2 + 1 and error[..., 2].max() <= 255 / 3 / 2 + 1
    with pytest.raises(ValueError, match=r"encode_gif: expected a uint8 \(frames, height"):
        encode_gif(frames[0])


def test_wav_reads_back_with_the_wave_module():
    samples = np.array([0, 1, -1, 32767, -32768, 1234], dtype=np.int16)
    with wave.open(io.BytesIO(encode_wav(samples, 8000))) as sound:
        assert (sound.getnchannels(), sound.getsampwidth(), sound.getframerate()) == (1, 2, 8000)
        assert np.array_equal(np.frombuffer(sound.readframes(10), "<i2"), samples)
    written = io.BytesIO()
    with wave.open(written, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(samples.tobytes())
    assert written.getvalue() == encode_wav(samples, 8000)


def test_boxes_are_the_pixels_pil_draws():
    Image = pytest.importorskip("PIL.Image")
    from PIL import ImageDraw  # noqa: PLC0415

    rng = np.random.default_rng(3)
    for i in range(300):
        box = rng.uniform(-4, 16, 4) if i % 2 else rng.integers(-3, 14, 4).astype(float)
        if i % 7 == 0:
            box[2] = box[0]  # a stroke of no length
        picture = Image.fromarray(np.zeros((10, 12, 3), np.uint8))
        left, top, right, bottom = box
        corners = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
        ImageDraw.Draw(picture).line(corners, width=2, fill="Red")
        ours = np.zeros((10, 12, 3), np.uint8)
        draw_box(ours, box)
        assert np.array_equal(ours, np.array(picture)), box


def test_video_grid_and_pr_curve_by_hand():
    clips = np.arange(3 * 2 * 1 * 2 * 2, dtype=np.float32).reshape(3, 2, 1, 2, 2)
    frames = video_frames(clips)  # 3 clips padded to 4: torch's grid of 1 row of 4
    assert frames.shape == (2, 2, 8, 1)
    assert np.array_equal(frames[1, :, 2:4, 0], clips[1, 1, 0]) and not frames[:, :, 6:].any()
    labels, predictions = np.array([1, 0, 1, 0]), np.array([0.9, 0.8, 0.3, 0.1])
    tp, fp, tn, fn, precision, recall = compute_curve(labels, predictions, 3)
    # thresholds 0, 0.5, 1: predictions bucketed as 1, 1, 0, 0
    assert tp.tolist() == [2, 1, 0] and fp.tolist() == [2, 1, 0] and tn.tolist() == [0, 1, 2]
    assert fn.tolist() == [0, 1, 2] and precision.tolist() == [0.5, 0.5, 0]
    assert recall.tolist() == [1, 0.5, 0]


# --- the writer against torch's ---------------------------------------------------------------
def parsed_events(folder):
    """Every summary value of folder's runs (tensorboard's classes), less wall times; images
    as their pixels; the audio's WAV kept as bytes."""
    from tensorboard.compat.proto.event_pb2 import Event  # noqa: PLC0415
    from test_tensorboard import read_records  # noqa: PLC0415

    out = []
    for path in sorted(folder.rglob("events.out.tfevents.*")):
        for payload in read_records(path)[1:]:  # less the version event
            event = Event.FromString(payload)
            event.ClearField("wall_time")
            pixels = []
            for value in event.summary.value:
                if value.image.encoded_image_string:
                    pixels.append(read_png_any(value.image.encoded_image_string))
                    value.image.ClearField("encoded_image_string")
            out.append((event, pixels))
    return out


def test_the_same_events_as_torchs_writer(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    rng = np.random.default_rng(4)
    sound = rng.uniform(-1.2, 1.2, (1, 300))
    labels, predictions = rng.integers(0, 2, 60), rng.random(60)
    weights = rng.random(60)
    counts = [rng.integers(0, 9, 5).astype(float) for _ in range(4)]
    rates = [rng.random(5) for _ in range(2)]
    vertices = rng.normal(size=(1, 4, 3)).astype(np.float32)
    colors = rng.integers(0, 256, (1, 4, 3)).astype(np.int32)
    faces = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)
    image = rng.random((3, 12, 14)).astype(np.float32)
    boxes = np.array([[1, 2, 8, 9], [3.5, 0.2, 13, 11.7]], dtype=np.float32)
    layout = {
        "Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
        "USA": {"dow": ["Margin", ["dow/a", "dow/b", "dow/c"]]},
    }

    def write(writer, lib):
        writer.add_audio("sound", lib.tensor(sound), 1, sample_rate=16000)
        writer.add_pr_curve("pr", lib.tensor(labels), lib.tensor(predictions), 2, 31)
        writer.add_pr_curve("weighted", labels, predictions, 2, 200, weights=weights)
        writer.add_pr_curve_raw("raw", *counts, *rates, global_step=3, num_thresholds=5)
        writer.add_mesh("mesh", lib.tensor(vertices), lib.tensor(colors), lib.tensor(faces),
                        {"camera": {"fov": 75}}, 4)  # fmt: skip
        writer.add_mesh("cloud", lib.tensor(vertices), global_step=4)
        writer.add_custom_scalars(layout)
        writer.add_custom_scalars_multilinechart(["a", "b"], title="lines")
        writer.add_custom_scalars_marginchart(["v", "lo", "hi"], category="c")
        writer.add_image_with_boxes("boxes", lib.tensor(image), lib.tensor(boxes), 5)
        writer.add_image_with_boxes("hwc", image.transpose(1, 2, 0), boxes[:1], 5,
                                    dataformats="HWC", labels=["only one label"])  # fmt: skip
        writer.add_image_with_boxes("labelled", image, boxes, 6, labels=["cat", "dog"])
        writer.add_image_with_boxes("scaled", image, boxes, 6, rescale=2)

    ours, theirs = write_both(tmp_path, torch, write)
    assert capsys.readouterr().out.count("audio amplitude out of range, auto clipped") == 2
    ours_events, their_events = parsed_events(ours), parsed_events(theirs)
    assert len(ours_events) == len(their_events) == 13
    for (event, pixels), (their_event, their_pixels) in zip(ours_events, their_events):
        assert event == their_event
        assert len(pixels) == len(their_pixels)
        for part, their_part in zip(pixels, their_pixels):
            assert np.array_equal(part, their_part), event.summary.value[0].tag
    assert ours_events[-1][1][0].shape == (24, 28, 3)  # rescaled; the proto keeps 12 x 14


def test_tensorboard_reads_audio_pr_curves_and_meshes(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: PLC0415
    from tensorboard.util import tensor_util  # noqa: PLC0415

    rng = np.random.default_rng(5)
    labels, predictions = rng.integers(0, 2, 40), rng.random(40)
    with SummaryWriter(tmp_path) as writer:
        writer.add_audio("sound", tc.tensor(np.sin(np.arange(100) / 5)), 1, sample_rate=800)
        writer.add_pr_curve("pr", labels, predictions, 2, num_thresholds=11)
        writer.add_mesh("m", np.zeros((1, 5, 3)), global_step=3)
    accumulator = EventAccumulator(str(tmp_path), size_guidance={"audio": 0, "tensors": 0})
    accumulator.Reload()
    (sound,) = accumulator.Audio("sound")
    assert (sound.step, sound.sample_rate, sound.length_frames) == (1, 800, 100)
    (curve,) = accumulator.Tensors("pr")
    rows = tensor_util.make_ndarray(curve.tensor_proto)
    assert rows.shape == (6, 11) and curve.step == 2
    np.testing.assert_allclose(rows, compute_curve(labels, predictions, 11), rtol=1e-6)
    (points,) = accumulator.Tensors("m_VERTEX")
    assert tensor_util.make_ndarray(points.tensor_proto).shape == (1, 5, 3)


def test_video_is_a_gif_of_the_clips_grid(tmp_path):
    clips = np.random.default_rng(6).integers(0, 4, (2, 3, 3, 5, 6), dtype=np.uint8) * 80
    with SummaryWriter(tmp_path) as writer:
        writer.add_video("clip", tc.tensor(clips), 7, fps=10)
    ((step, value),) = summaries(tmp_path)
    picture = decode(value[4][0])
    assert (step, picture[1], picture[2], picture[3]) == (7, [5], [12], [3])
    frames, info = gif_frames(picture[4][0])
    expected = np.concatenate([clips[0], clips[1]], axis=3).transpose(0, 2, 3, 1)
    assert np.array_equal(frames, expected) and info["duration"] == 100
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard._utils import _prepare_video  # noqa: PLC0415

    for count in (1, 3, 5):
        batch = np.random.default_rng(count).random((count, 2, 3, 4, 5))
        np.testing.assert_array_equal(video_frames(batch), _prepare_video(batch))


def test_embedding_files_as_torchs(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    rng = np.random.default_rng(7)
    points = rng.normal(size=(5, 3)).astype(np.float32)
    label_img = rng.random((5, 3, 4, 4)).astype(np.float32)
    columns = [[f"w{i}", i % 2] for i in range(5)]

    def write(writer, lib):
        writer.add_embedding(lib.tensor(points), metadata=list("abcde"),
                             label_img=lib.tensor(label_img), global_step=3)  # fmt: skip
        writer.add_embedding(points, tag="per/cent% é", metadata=columns,
                             metadata_header=["word", "odd"])  # fmt: skip
        writer.add_embedding(lib.tensor(points[:2]))

    ours, theirs = write_both(tmp_path, torch, write)

    def projector_files(folder):
        paths = [p for p in folder.rglob("*") if p.is_file() and "tfevents" not in p.name]
        return sorted(p.relative_to(folder) for p in paths)

    files = projector_files(theirs)
    assert projector_files(ours) == files and len(files) == 7
    for name in files:
        if name.suffix in (".tsv", ".pbtxt"):
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    sprite = ours / "00003/default/sprite.png"
    assert np.array_equal(read_png(sprite.read_bytes()), read_png_any(
        (theirs / "00003/default/sprite.png").read_bytes()))  # fmt: skip
    assert read_png(sprite.read_bytes()).shape == (12, 12, 3)  # 3 columns of 4 x 4, square


def test_refusals(tmp_path, capsys):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(AssertionError, match="add_audio: input tensor should be 1 dimens"):
            writer.add_audio("a", np.zeros((2, 3)))
        with pytest.raises(ValueError, match=r"add_video: expected a \(N, T, C, H, W\)"):
            writer.add_video("v", np.zeros((2, 3, 4, 5)))
        with pytest.raises(AssertionError, match="Expected 3 tags, got 2"):
            writer.add_custom_scalars_marginchart(["a", "b"])
        with pytest.raises(AssertionError, match="a margin chart needs 3 tags, got 1"):
            writer.add_custom_scalars({"c": {"t": ["Margin", ["a"]]}})
        with pytest.raises(ValueError, match=r"shape should be of shape BxNx3, but got \(4, 3\)"):
            writer.add_mesh("m", np.zeros((4, 3)))
        with pytest.raises(ValueError, match=r"expected \(N, 4\) boxes"):
            writer.add_image_with_boxes("b", np.zeros((3, 4, 4)), np.zeros((2, 3)))
        with pytest.raises(AssertionError, match="#labels should equal with #data points"):
            writer.add_embedding(np.zeros((3, 2)), metadata=["a"])
        with pytest.raises(AssertionError, match="#images should equal with #data points"):
            writer.add_embedding(np.zeros((3, 2)), label_img=np.zeros((2, 3, 2, 2)), tag="i")
        with pytest.raises(AssertionError, match="mat should be 2D"):
            writer.add_embedding(np.zeros(3), tag="flat")
        with pytest.raises(AssertionError, match="len of header must be equal"):
            writer.add_embedding(np.zeros((1, 2)), [["a", 1]], metadata_header=["x"], tag="h")
        writer.add_embedding(np.zeros((1, 2)), tag="twice")
        writer.add_embedding(np.zeros((1, 2)), tag="twice")
        assert "Embedding dir exists" in capsys.readouterr().out
        (tmp_path / "00000" / "file").write_text("")
        with pytest.raises(NotADirectoryError, match="exists, but is a file"):
            writer.add_embedding(np.zeros((1, 2)), tag="file")


@pytest.mark.skipif(not tc.backend.cupy_available(), reason="needs a CUDA GPU")
def test_gpu_tensors_write_what_host_tensors_write(tmp_path):
    rng = np.random.default_rng(8)
    sound, clips = rng.uniform(-1, 1, 50), rng.random((2, 2, 3, 4, 4))
    points, labels, predictions = rng.normal(size=(3, 2)), rng.integers(0, 2, 9), rng.random(9)
    vertices, image, boxes = rng.normal(size=(1, 3, 3)), rng.random((3, 6, 6)), [[1, 1, 4, 4]]

    def write(folder, place):
        with SummaryWriter(folder) as writer:
            writer.add_audio("a", place(sound), 1)
            writer.add_video("v", place(clips), 1)
            writer.add_pr_curve("p", place(labels), place(predictions), 1)
            writer.add_mesh("m", place(vertices), global_step=1)
            writer.add_image_with_boxes("b", place(image), place(np.array(boxes)), 1)
            writer.add_embedding(place(points), label_img=place(clips.reshape(4, 3, 4, 4)[:3]))

    write(tmp_path / "host", tc.tensor)
    write(tmp_path / "gpu", lambda array: tc.tensor(array).to_gpu())
    assert [v for _, v in summaries(tmp_path / "host")] == [
        v for _, v in summaries(tmp_path / "gpu")
    ]
    for name in ("00000/default/tensors.tsv", "00000/default/sprite.png"):
        assert (tmp_path / "host" / name).read_bytes() == (tmp_path / "gpu" / name).read_bytes()

"""Tests for HellaSwag-style evaluation: reading the official format (tricycle_datasets.hellaswag)
and scoring endings by their loss (tricycle.apps.evaluate)."""

import hashlib
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import made_once
from tricycle.apps.checkpoint import save_state
from tricycle.apps.evaluate import ending_losses, evaluate_hellaswag, load_model, main, sample_text
from tricycle.configs import DebugConfig
from tricycle.dataset import CausalLMDataset
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.random import manual_seed
from tricycle.tokeniser import END_OF_TEXT, BPETokeniser, CharTokeniser
from tricycle_datasets import hellaswag
from tricycle_datasets.hellaswag import Example, read_examples

# The text the model is trained on: each example's right ending is the rest of one sentence.
SENTENCES = [
    ("A man is sitting on a roof.", "He starts pulling up roofing on a roof."),
    ("The girl picks up the violin.", "She plays a slow song for her teacher."),
    ("Two dogs run across the field.", "They chase a red ball into the lake."),
    ("A chef slices the onions.", "He drops them into a hot pan of oil."),
]
TRAINING_TEXT = "\n".join(f"{context} {ending}" for context, ending in SENTENCES) + "\n"


def official_line(i: int, context: str, endings: list[str], label, **overrides) -> str:
    """A line in the official file's format (ctx = ctx_a + " " + ctx_b)."""
    ctx_a, _, ctx_b = context.rpartition(". ")
    item = {
        "ind": i,
        "activity_label": "Testing",
        "ctx_a": ctx_a + ".",
        "ctx_b": ctx_b,
        "ctx": context,
        "split": "val",
        "split_type": "indomain",
        "label": label,
        "endings": endings,
        "source_id": f"test~{i}",
        **overrides,
    }
    return json.dumps({k: v for k, v in item.items() if v is not None})


@pytest.fixture
def hellaswag_file(tmp_path) -> Path:
    return write_hellaswag_file(tmp_path / "hellaswag_val.jsonl")


def write_hellaswag_file(path: Path) -> Path:
    """Four crafted examples: the right ending copies the training text; the wrong ones are
    other sentences' endings. The label sits in a different place each time, and the
    variants of the official format (label as a string, no "ctx") all appear."""
    lines = []
    for i, (context, ending) in enumerate(SENTENCES):
        wrong = [e for j, (_, e) in enumerate(SENTENCES) if j != i]
        endings = wrong[:i] + [ending] + wrong[i:]
        # endings[1:] of the right one: the model has seen "He"/"She"/... after many contexts
        label = i if i % 2 == 0 else str(i)
        ctx = None if i == 3 else context  # the last one only has ctx_a and ctx_b
        extra = {"ctx_a": context, "ctx_b": ""} if i == 3 else {}
        lines.append(official_line(i, context, endings, label, ctx=ctx, **extra))
    path.write_text("\n".join(lines) + "\n\n")
    return path


def overfit(directory: Path) -> None:
    """A tiny GPT overfit on TRAINING_TEXT and its tokeniser, pickled into ``directory``."""
    tokeniser = BPETokeniser(300, special_tokens=[END_OF_TEXT]).train(TRAINING_TEXT * 5)
    tokens = tokeniser.encode(TRAINING_TEXT * 20)
    manual_seed(0)
    config = DebugConfig(vocab_size=300, context_window=48, embedding_dim=32, n_layers=1)
    model = GPT(config)
    data = CausalLMDataset(tokens, 300, batch_size=16, context_window=48, seed=0).batch()
    optimiser, loss_fn = AdamW(learning_rate=1e-2), CrossEntropy()
    for _ in range(200):  # to a loss near 0.07 from any of the seeds tried (0-2)
        optimiser.step()
        inputs, targets = next(data)
        loss = loss_fn(targets, model(inputs))
        loss.backward()
        model.update(optimiser)
    assert float(loss.array) < 0.2, "the model did not learn the training text"
    (directory / "trained.pkl").write_bytes(pickle.dumps((model, tokeniser)))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny GPT overfit on TRAINING_TEXT, and its tokeniser (trained once per session)."""
    made = made_once(tmp_path_factory, "hellaswag_gpt", overfit)
    return pickle.loads((made / "trained.pkl").read_bytes())


# -------------------------------------------------------------------------------- reading
def test_read_the_official_format_and_its_variants(hellaswag_file):
    examples = read_examples(hellaswag_file)
    assert len(examples) == 4
    assert (
        examples[0] == Example(SENTENCES[0][0], examples[0].endings, 0, "Testing")
        and examples[0].endings[0] == SENTENCES[0][1]
    )
    assert [e.label for e in examples] == [0, 1, 2, 3]  # "1" and "3" were strings
    assert examples[3].context == SENTENCES[3][0]  # from ctx_a (and an empty ctx_b)
    assert len(read_examples(hellaswag_file, limit=2)) == 2


def test_context_from_ctx_a_and_ctx_b(tmp_path):
    line = official_line(0, "x", ["a", "b"], 1, ctx=None, ctx_a="A man sits.", ctx_b="he")
    (tmp_path / "f.jsonl").write_text(line)
    assert read_examples(tmp_path / "f.jsonl")[0].context == "A man sits. he"


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        (official_line(0, "c", ["a"], 0), "at least 2 strings"),
        (official_line(0, "c", ["a", 5], 0), "at least 2 strings"),
        (official_line(0, "c", ["a", "b"], 2), r"index of the right ending in \[0, 2\), got 2"),
        (official_line(0, "c", ["a", "b"], "x"), "got 'x'"),
        (official_line(0, "c", ["a", "b"], True), "got True"),
        (official_line(0, "c", ["a", "b"], None), "test split is unlabelled"),
        (official_line(0, "", ["a", "b"], 0, ctx_a=None), "no context"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(official_line(0, "fine. ok", ["a", "b"], 0) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_examples(path)
    assert f"{path}:2" in str(info.value)


def test_empty_file_and_bad_limit(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no examples"):
        read_examples(tmp_path / "empty.jsonl")
    with pytest.raises(ValueError, match="read_examples: limit must be None or an integer >= 1"):
        read_examples(tmp_path / "empty.jsonl", limit=0)


def test_the_val_set_is_downloaded_once_with_its_checksum(tmp_path, monkeypatch, hellaswag_file):
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hellaswag, "URL", hellaswag_file.as_uri())
    with pytest.raises(ValueError, match="checksum mismatch"):  # not the official file
        hellaswag.load_val()

    monkeypatch.setattr(
        hellaswag, "SHA256", hashlib.sha256(hellaswag_file.read_bytes()).hexdigest()
    )
    assert len(hellaswag.load_val()) == 4
    assert (tmp_path / "cache" / "hellaswag" / "hellaswag_val.jsonl").is_file()


# -------------------------------------------------------------------------------- scoring
def test_batched_padded_losses_equal_one_row_at_a_time(trained):
    model, tokeniser = trained
    rows = [tokeniser.encode(text) for text in ("A man is", "Two dogs run across the field.", "x")]
    n_context = [1, 3, 0]
    summed, mean = ending_losses(model, rows, n_context)
    model.eval()
    for i, (row, n) in enumerate(zip(rows, n_context)):
        if len(row) < 2:
            assert summed[i] == 0  # no token to predict
            continue
        start = max(n, 1) - 1
        logits = model(row[None, :-1])
        expected = CrossEntropy()(row[None, start + 1 :], logits[:, start:])
        assert mean[i] == pytest.approx(float(expected.array), rel=1e-5)
        assert summed[i] == pytest.approx(mean[i] * (len(row) - 1 - start), rel=1e-5)
    model.train()


def test_the_scorer_picks_the_ending_the_model_was_trained_on(trained, hellaswag_file):
    model, tokeniser = trained
    examples = read_examples(hellaswag_file)
    result = evaluate_hellaswag(model, tokeniser, examples, batch_rows=6)
    assert result == {"n": 4, "correct": 4, "correct_norm": 4, "acc": 1.0, "acc_norm": 1.0}
    assert model.training  # the mode is restored

    # an untrained model does not pass by chance on every example
    np.random.seed(1)
    fresh = GPT(model.config)
    assert evaluate_hellaswag(fresh, tokeniser, examples)["correct_norm"] < 4

    # ranks split the examples; their counts add up to the whole
    parts = [evaluate_hellaswag(model, tokeniser, examples, rank=r, world_size=3) for r in range(3)]
    assert [p["n"] for p in parts] == [2, 1, 1] and sum(p["correct"] for p in parts) == 4
    with pytest.raises(ValueError, match="rank 3 must be in"):
        evaluate_hellaswag(model, tokeniser, examples, rank=3, world_size=3)


def test_rows_longer_than_the_window_keep_their_end(trained):
    model, tokeniser = trained
    long_context = tokeniser.encode(TRAINING_TEXT * 3)  # longer than the 48-token window
    ending = tokeniser.encode(" He drops them into a hot pan of oil.")
    row = np.concatenate([long_context, ending])
    summed, mean = ending_losses(model, [row], [len(long_context)])
    # by hand: the row's last 48 tokens, scored on the ending's positions only
    window = model.config.context_window
    assert len(long_context) > window > len(ending)
    cropped = row[-window:]  # (48,): the end of the context, then the whole ending
    start = window - len(ending) - 1  # the position that predicts the ending's first token
    model.eval()
    logits = model(cropped[None, :-1])  # (1, 47, V)
    expected = float(CrossEntropy()(cropped[None, start + 1 :], logits[:, start:]).array)
    model.train()
    assert mean[0] == pytest.approx(expected, rel=1e-5)
    assert summed[0] == pytest.approx(expected * len(ending), rel=1e-5)


# -------------------------------------------------------------------------------- command line
def save_run(run: Path, model: GPT) -> None:
    """A run directory's safe checkpoint, as the training script writes it (without the
    tokeniser it records)."""
    state = {"model": model.state_dict(), "run": {"config": model.config.to_dict()}}
    save_state(run / "checkpoint.npz", state)


def test_evaluate_command_on_a_run_directory(trained, hellaswag_file, tmp_path, capsys):
    model, tokeniser = trained
    run = tmp_path / "run"
    run.mkdir()
    save_run(run, model)
    tokeniser.save(run / "tokeniser.json")
    result = main([str(run), "--hellaswag", str(hellaswag_file)])
    assert result["acc_norm"] == 1.0
    assert json.loads(capsys.readouterr().out)["hellaswag"]["n"] == 4

    (run / "model.pkl").write_bytes(pickle.dumps(model))
    assert (
        main([str(run / "model.pkl"), "--hellaswag", str(hellaswag_file), "--limit", "2"])["n"] == 2
    )


def test_evaluate_command_errors(trained, hellaswag_file, tmp_path):
    model, tokeniser = trained
    with pytest.raises(SystemExit, match="missing.pkl does not exist"):
        main([str(tmp_path / "missing.pkl"), "--hellaswag", str(hellaswag_file)])
    run = tmp_path / "run"
    run.mkdir()
    save_run(run, model)
    with pytest.raises(SystemExit, match="no tokeniser"):
        main([str(run), "--hellaswag", str(hellaswag_file)])
    big = BPETokeniser(1000)
    big._set_merges([(a, b) for a in range(10) for b in range(10)])  # 356 ids
    big.save(run / "tokeniser.json")
    with pytest.raises(SystemExit, match=r"356 ids\) does not belong to the model"):
        main([str(run), "--hellaswag", str(hellaswag_file)])
    with pytest.raises(SystemExit):
        main([str(run), "--limit", "0"])
    with pytest.raises(SystemExit, match="not JSON"):
        tokeniser.save(run / "tokeniser.json")
        (tmp_path / "bad.jsonl").write_text("{oops\n")
        main([str(run), "--hellaswag", str(tmp_path / "bad.jsonl")])
    assert load_model(run)[1].n_tokens == 300
    # a character-level tokeniser without the examples' characters: one line, naming the file
    CharTokeniser().train("abc ").save(run / "tokeniser.json")
    with pytest.raises(SystemExit, match=r"^evaluate: .*\.jsonl: CharTokeniser.encode: .* not in"):
        main([str(run), "--hellaswag", str(hellaswag_file)])


# -------------------------------------------------------------------------------- samples
def test_sample_text(trained):
    model, tokeniser = trained
    text = sample_text(model, tokeniser, "A chef slices", n_tokens=12, temperature=0.0)
    assert text.startswith("A chef slices the onions.")  # greedy: the memorised sentence
    assert sample_text(model, tokeniser, "Two", 10, seed=3) == sample_text(
        model, tokeniser, "Two", 10, seed=3
    )
    assert isinstance(sample_text(model, tokeniser, "", n_tokens=5), str)  # starts after <eot>
    assert model.training

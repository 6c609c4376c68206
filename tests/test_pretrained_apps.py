"""Pretrained models in the applications: ``tricycle-train --init-from DIR`` fine-tunes a
Hugging Face directory (its weights, architecture and tokeniser) and resumes; the sampler
and ``python -m tricycle.evaluate`` take the directory itself. A small random GPT-2 with a
tokeniser trained here; no network."""

import json

import numpy as np
import pytest

from tests.helpers import DATA_DIR
from tests.test_hellaswag import write_hellaswag_file
from tricycle.apps import evaluate, sample
from tricycle.apps.runs import RunDirectory
from tricycle.apps.train import run
from tricycle.hf_tokeniser import PretrainedTokeniser
from tricycle.models import GPT
from tricycle_datasets.hellaswag import read_examples, render

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "shakespeare.txt"
    path.write_text((DATA_DIR / "tinyshakespeare.txt").read_text(encoding="utf-8")[:30_000])
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, text_file):
    """A Hugging Face GPT-2 directory: random weights, a 300-id BPE trained on the text."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    directory = tmp_path_factory.mktemp("gpt2")
    tokeniser = Tokenizer(models.BPE())
    tokeniser.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"], show_progress=False,
    )  # fmt: skip
    tokeniser.train([str(text_file)], trainer)
    tokeniser.model.save(str(directory))  # vocab.json + merges.txt
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=300, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    transformers.GPT2LMHeadModel(config).save_pretrained(directory)
    return directory


def test_init_from_fine_tunes_resumes_and_samples(model_dir, text_file, tmp_path, capsys):
    out = tmp_path / "run"
    common = ["--dataset", str(text_file), "--out-dir", str(out), "--no-progress",
              "--sample-tokens", "0", "--eval-interval", "1", "--eval-steps", "1"]  # fmt: skip
    summary = run([*common, "--config", "debug", "--init-from", str(model_dir), "--steps", "1",
                   "--batch-size", "2", "--context-window", "32", "--lr", "1e-9",
                   "--warmup", "0"])  # fmt: skip
    assert summary["steps"] == 1 and np.isfinite(summary["loss"])
    run_config = json.loads((out / "config.json").read_text())
    assert run_config["settings"]["init_from"] == str(model_dir)
    assert run_config["config"]["context_window"] == 32  # cropped from 64
    assert run_config["config"]["embedding_dim"] == 32 and run_config["config"]["n_heads"] == 2

    # the run started from the pretrained weights (a learning rate of 1e-9 barely moves them)
    pretrained = GPT.from_pretrained(model_dir).state_dict()
    trained = RunDirectory(out).load_state()["model"]
    for name, value in trained.items():
        expected = pretrained[name][: len(value)]  # the position embedding's first 32 rows
        np.testing.assert_allclose(value, expected, atol=1e-6, err_msg=name)

    summary = run([*common, "--resume", "--steps", "2"])
    assert summary["steps"] == 2

    # the run samples with the model's tokeniser, and so does the model directory itself
    tokeniser = PretrainedTokeniser.from_dir(model_dir)
    for source in (out, model_dir):
        capsys.readouterr()
        assert sample.main([str(source), "--prompt", "ROMEO:", "--max-tokens", "8",
                            "--temperature", "0"]) == 0  # fmt: skip
        text = capsys.readouterr().out
        assert text.startswith("ROMEO:") and len(tokeniser.encode(text)) >= 8


def test_the_sampler_reads_special_tokens_in_the_prompt_when_asked(model_dir, capsys):
    """--allow-special: <|endoftext|> in --prompt is its id, as transformers' tokeniser reads
    it; without it, its characters. The greedy continuation is the model's either way."""
    tokeniser = PretrainedTokeniser.from_dir(model_dir)
    model = GPT.from_pretrained(model_dir)
    prompt = "ROMEO:<|endoftext|>JULIET:"
    fast = transformers.GPT2TokenizerFast.from_pretrained(str(model_dir))
    for flags, allowed in (([], ()), (["--allow-special"], "all")):
        ids = tokeniser.encode(prompt, allowed_special=allowed)
        assert (0 in ids.tolist()) == bool(flags)  # <|endoftext|> is id 0
        if flags:
            assert ids.tolist() == fast.encode(prompt)
        new = model.generate(ids[None], 8, temperature=0)[0, len(ids) :].tolist()
        new = new[: new.index(0)] if 0 in new else new  # the sampler stops at the end id
        capsys.readouterr()
        assert sample.main([str(model_dir), "--prompt", prompt, "--max-tokens", "8",
                            "--temperature", "0", *flags]) == 0  # fmt: skip
        assert capsys.readouterr().out == prompt + tokeniser.decode(new) + "\n"


def test_evaluate_takes_a_model_directory(model_dir, tmp_path):
    """The command on the directory scores as the library does on the model and tokeniser
    it holds, and as the Hugging Face model itself does (the losses of each ending's tokens,
    in float64 from torch's logits)."""
    hellaswag = write_hellaswag_file(tmp_path / "hellaswag.jsonl")
    result = evaluate.main([str(model_dir), "--hellaswag", str(hellaswag), "--limit", "3"])
    tokeniser = PretrainedTokeniser.from_dir(model_dir)
    examples = read_examples(hellaswag, 3)
    assert result == evaluate.evaluate_hellaswag(
        GPT.from_pretrained(model_dir), tokeniser, examples
    )

    reference = transformers.GPT2LMHeadModel.from_pretrained(model_dir).eval()
    correct = correct_norm = 0
    for example in examples:
        rows, n_context = render(tokeniser, example)
        summed, mean = [], []
        for row in rows:  # (T,) each: the context's tokens, then the ending's
            with torch.no_grad():
                logits = reference(torch.tensor(row[None])).logits[0, :-1].double()  # (T-1, V)
            losses = -torch.log_softmax(logits, -1)[torch.arange(len(row) - 1), row[1:]]
            summed.append(float(losses[n_context - 1 :].sum()))
            mean.append(float(losses[n_context - 1 :].mean()))
        correct += int(np.argmin(summed) == example.label)
        correct_norm += int(np.argmin(mean) == example.label)
    assert result["n"] == 3
    assert (result["correct"], result["correct_norm"]) == (correct, correct_norm)
    assert result["acc"] == correct / 3 and result["acc_norm"] == correct_norm / 3


def test_init_from_errors_are_one_line(model_dir, text_file, tmp_path):
    base = ["--dataset", str(text_file), "--out-dir", str(tmp_path / "r"), "--no-progress",
            "--config", "debug", "--steps", "1"]  # fmt: skip
    with pytest.raises(SystemExit, match=r"--init-from .*n_layers=2, not 3"):
        run([*base, "--init-from", str(model_dir), "--n-layer", "3"])
    with pytest.raises(SystemExit, match=r"--init-from .*missing: no config.json|no such file"):
        run([*base, "--init-from", str(tmp_path)])


def test_fine_tuning_keeps_rope_scaling_and_attention_biases():
    """--init-from takes every field that shapes the model: a Qwen2's q/k/v biases (else its
    weights would not fit) and a Llama 3.1's RoPE scaling (else it would compute something
    else); and the training command sets both as flags."""
    from tricycle.apps import train as train_cli
    from tricycle.apps.pretrained import fine_tuning_config
    from tricycle.configs import CPUConfig, GPTConfig

    scaling = {"rope_type": "linear", "factor": 2.0}
    pretrained = GPTConfig(arch="llama", embedding_dim=32, n_heads=4, rope_scaling=scaling,
                           attention_bias="qkv")  # fmt: skip
    config = fine_tuning_config(CPUConfig(), pretrained, {})
    assert (config.arch, config.rope_scaling, config.attention_bias) == ("llama", scaling, "qkv")
    args = train_cli.parse_args(["--arch", "llama", "--rope-scaling", json.dumps(scaling),
                                 "--attention-bias", "all"])  # fmt: skip
    config = train_cli.build_config(args)
    assert (config.rope_scaling, config.attention_bias) == (scaling, "all")
    with pytest.raises(SystemExit):
        train_cli.parse_args(["--rope-scaling", "linear"])  # not a JSON object

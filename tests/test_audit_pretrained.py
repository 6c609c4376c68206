"""Other people's models as their users meet them: a loaded model computes transformers'
logits as loaded (dropout off, as ``from_pretrained`` gives it), the sampling filters give
transformers' logits processors' distributions, an export never destroys what its target
held, and the sampler's mistakes are one line. Tiny models made here; no network."""

import json
import sys
import types

import numpy as np
import pytest

from tests.test_inference import trained  # noqa: F401 - the fixture: a trained run
from tricycle import decode
from tricycle.apps import sample
from tricycle.configs import GPTConfig
from tricycle.hf_files import PretrainedError
from tricycle.hf_tokeniser import PretrainedTokeniser
from tricycle.models import GPT

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")


def gpt2_dir(directory, **overrides):
    """A random GPT-2 of transformers' defaults (dropout 0.1) saved in ``directory``."""
    torch.manual_seed(0)
    options = {"bos_token_id": 0, "eos_token_id": 0, "initializer_range": 0.3, **overrides}
    config = transformers.GPT2Config(
        vocab_size=61, n_positions=32, n_embd=32, n_layer=2, n_head=4, **options)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(directory)
    return model, directory


def test_a_loaded_model_gives_their_logits_as_loaded(tmp_path):
    """transformers' from_pretrained gives a model in eval mode; so does tricycle's, else
    GPT-2's dropout of 0.1 changes every forward."""
    theirs, directory = gpt2_dir(tmp_path / "gpt2")
    ours = GPT.from_pretrained(directory)
    assert not ours.training and ours.config.dropout == 0.1
    tokens = np.random.default_rng(0).integers(0, 61, size=(2, 9))
    with torch.no_grad():
        expected = theirs(torch.tensor(tokens)).logits.numpy()
    np.testing.assert_allclose(ours(tokens).array, expected, rtol=1e-5, atol=1e-5)
    ours.train()  # fine-tuning turns dropout back on, as in torch
    assert ours.blocks[0].training


# ====================================================================== sampling filters


def their_probabilities(logits, temperature, top_k, top_p):
    """transformers' generate: temperature, then top-k, then top-p, then softmax."""
    from transformers.generation import logits_process as lp

    scores = torch.tensor(logits)
    warpers = [lp.TemperatureLogitsWarper(temperature)]
    warpers += [lp.TopKLogitsWarper(top_k)] if top_k is not None else []
    warpers += [lp.TopPLogitsWarper(top_p)] if top_p is not None else []
    for warper in warpers:
        scores = warper(None, scores)
    return torch.softmax(scores, dim=-1).numpy()


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("top_k", [None, 1, 7])
@pytest.mark.parametrize("top_p", [None, 0.05, 0.6, 0.95, 1.0])
def test_the_sampling_distribution_is_transformers(temperature, top_k, top_p):
    rng = np.random.default_rng(int(temperature * 10) + (top_k or 0))
    logits = rng.normal(0, 2, size=(4, 50))  # (B, V)
    logits[:, -5:] = -np.inf  # ids a tokeniser cannot decode (vocab_limit)
    expected = their_probabilities(logits, temperature, top_k, top_p)
    got = decode.probabilities(logits, temperature, top_k, top_p)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    # draws come from that distribution, and a seed repeats them
    draws = decode.sample_next(logits, temperature, top_k, np.random.default_rng(1), top_p=top_p)
    assert (got[np.arange(4), draws] > 0).all()
    again = decode.sample_next(logits, temperature, top_k, np.random.default_rng(1), top_p=top_p)
    np.testing.assert_array_equal(draws, again)


def test_a_bad_top_p_is_named():
    logits = np.zeros((1, 5))
    for top_p in (0.0, 1.5, float("nan"), -0.1):
        with pytest.raises(ValueError, match="top_p must be a number in \\(0, 1\\]"):
            decode.sample_next(logits, 1.0, None, np.random.default_rng(0), top_p=top_p)


# ====================================================================== exports


def small_gpt() -> GPT:
    return GPT(GPTConfig(embedding_dim=16, n_heads=2, n_layers=1, context_window=8,
                         vocab_size=20))  # fmt: skip


def test_an_export_never_replaces_a_file_or_a_run_directory(tmp_path, trained):  # noqa: F811
    model = small_gpt()
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(PretrainedError, match="notes.txt: not a directory"):
        model.save_pretrained(target)
    assert target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing left over

    run = trained[0] / "run"  # a tricycle run: its config.json is the run's, not a model's
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(PretrainedError, match="config.json is not a Hugging Face model's"):
        model.save_pretrained(run)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_a_re_export_keeps_other_safetensors_files(tmp_path):
    """Only the model's own weights (model.safetensors, its shards) are replaced: an
    adapter or any other file beside them stays."""
    model = small_gpt()
    target = tmp_path / "export"
    model.save_pretrained(target)
    (target / "adapter_model.safetensors").write_bytes(b"someone else's")
    (target / "model-00001-of-00002.safetensors").write_bytes(b"an old shard")
    model.save_pretrained(target)
    assert sorted(p.name for p in target.iterdir()) == [
        "adapter_model.safetensors", "config.json", "model.safetensors"]  # fmt: skip


# ====================================================================== the sampler


def one_line_failure(capsys, *argv):
    with pytest.raises(SystemExit) as exit_:
        sample.main([*map(str, argv), "--max-tokens", "2"])
    message = str(exit_.value.code) if not isinstance(exit_.value.code, int) else ""
    message = message or capsys.readouterr().err.strip()
    assert exit_.value.code != 0 and "\n" not in message and "Traceback" not in message
    return message


def test_the_sampler_names_what_a_model_directory_lacks(tmp_path, capsys):
    _, directory = gpt2_dir(tmp_path / "gpt2")
    (directory / "model.safetensors").unlink()
    message = one_line_failure(capsys, directory)
    assert "no model.safetensors" in message and "not readable weights" not in message, message

    _, directory = gpt2_dir(tmp_path / "again")
    message = one_line_failure(capsys, directory, "--tokeniser", tmp_path / "nowhere.json")
    assert "nowhere.json: no such file" in message, message


def llama_dir_with_a_bos_tokeniser(directory):
    """A random Llama whose tokenizer.json puts <s> (id 0) before every text, as Llama 3's
    puts <|begin_of_text|>: (transformers' tokeniser, their model)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokeniser = Tokenizer(models.BPE())
    tokeniser.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokeniser.decoder = decoders.ByteLevel()
    tokeniser.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 0)])  # fmt: skip
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>", "</s>"], show_progress=False,
    )  # fmt: skip
    tokeniser.train_from_iterator([__doc__ * 4], trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokeniser)
    fast.save_pretrained(directory)
    torch.manual_seed(2)
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=32, intermediate_size=40, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=None, pad_token_id=None, initializer_range=0.5,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(directory)
    return fast, model


def test_the_sampler_prompts_and_stops_as_transformers_generate(tmp_path, capsys):
    """A model directory's tokeniser puts its BOS before the prompt, and its eos_token_id
    ends the sample: the text of transformers' greedy generate, to the same token."""
    directory = tmp_path / "llama"
    fast, model = llama_dir_with_a_bos_tokeniser(directory)
    prompt = "a loaded model"
    ids = torch.tensor([fast(prompt)["input_ids"]])
    assert ids[0, 0] == 0  # their tokeniser's BOS

    def generate(**options):
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=12, do_sample=False, **options)
        return out[0, ids.shape[1] :].tolist()

    new = generate(min_new_tokens=12, eos_token_id=None)
    eos = next(i for n, i in enumerate(new) if n >= 3 and i not in new[:n])  # a later one
    for name in ("config.json", "generation_config.json"):
        path = directory / name
        path.write_text(json.dumps({**json.loads(path.read_text()), "eos_token_id": eos}))
    expected = new[: new.index(eos)]
    assert generate(eos_token_id=eos) == [*expected, eos]  # transformers stops there

    capsys.readouterr()
    assert sample.main([str(directory), "--prompt", prompt, "--max-tokens", "12",
                        "--temperature", "0"]) == 0  # fmt: skip
    assert capsys.readouterr().out == prompt + fast.decode(expected) + "\n"
    # a run fine-tuned from it records the tokeniser, prefix and all
    ours = PretrainedTokeniser.from_dir(directory)
    ours.save(tmp_path / "tokeniser.json")
    again = PretrainedTokeniser.load(tmp_path / "tokeniser.json")
    assert ours.prefix_ids == again.prefix_ids == (0,)


def test_special_token_ids_survive_an_export(tmp_path):
    """The ids of a model's directory, handed to ``write``, are what transformers reads
    back from the export (its generate stops at the same eos)."""
    from tricycle import pretrained

    _, directory = gpt2_dir(tmp_path / "gpt2", eos_token_id=[5, 7], bos_token_id=3)
    ids = pretrained.token_ids(directory)
    assert ids == {"bos_token_id": [3], "eos_token_id": [5, 7]}
    model = GPT.from_pretrained(directory)
    pretrained.write(tmp_path / "export", model.config, model.state_dict(), ids)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export")
    assert back.generation_config.eos_token_id == [5, 7]
    assert back.config.bos_token_id == 3 and pretrained.token_ids(tmp_path / "export") == ids


def test_a_bias_free_gpt_exports_with_zero_biases(tmp_path):
    """nanoGPT's bias=False: transformers' GPT-2 always has biases, and zeros give the same
    function, so the export loads with the same logits."""
    model = GPT(GPTConfig(embedding_dim=16, n_heads=2, n_layers=2, context_window=8,
                          vocab_size=20, bias=False, activation_fn="gelu_tanh"))  # fmt: skip
    model.save_pretrained(tmp_path / "export")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export").eval()
    tokens = np.random.default_rng(0).integers(0, 20, size=(2, 8))
    with torch.no_grad():
        expected = theirs(torch.tensor(tokens)).logits.numpy()
    np.testing.assert_allclose(model(tokens).array, expected, rtol=1e-5, atol=1e-5)


def test_an_index_naming_the_wrong_shard_is_one_line(tmp_path):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=61, hidden_size=32, intermediate_size=40, num_hidden_layers=1,
        num_attention_heads=4, max_position_embeddings=16)  # fmt: skip
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path, max_shard_size="20KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    index["weight_map"]["model.norm.weight"] = next(s for s in shards if s != index[
        "weight_map"]["model.norm.weight"])  # fmt: skip
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(PretrainedError, match="holds no tensor 'model.norm.weight'"):
        GPT.from_pretrained(tmp_path)


def test_a_missing_local_path_is_not_looked_up_on_the_hub(tmp_path, monkeypatch):
    def download(*args, **kwargs):
        raise AssertionError("a path is not a hub name")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(
        snapshot_download=download))  # fmt: skip
    (tmp_path / "weights.bin").write_bytes(b"")
    for path, what in [(tmp_path / "nowhere", "no such directory"),
                       (tmp_path / "weights.bin", "not a directory"),
                       ("./typo", "no such directory")]:  # fmt: skip
        with pytest.raises(PretrainedError, match=f"{path}: {what}"):
            GPT.from_pretrained(path)


# ====================================================================== generate, as theirs


def test_generate_stops_rows_at_eos_as_transformers(tmp_path):
    """``GPT.generate(eos_token_id=)``: transformers' greedy generate of a batch, to the id.
    A row that has ended repeats the end id (their pad, which defaults to eos), and both
    stop once every row has ended."""
    theirs, directory = gpt2_dir(tmp_path / "gpt2")
    ours = GPT.from_pretrained(directory)
    prompt = np.random.default_rng(3).integers(1, 61, size=(3, 4))
    free = ours.generate(prompt, 10, temperature=0)[:, 4:]  # (3, 10), no end
    eos = next(int(i) for i in free[0] if i not in free[2])  # the last row never ends
    got = ours.generate(prompt, 10, eos_token_id=eos, temperature=0)
    with torch.no_grad():
        expected = theirs.generate(torch.tensor(prompt), max_new_tokens=10, do_sample=False,
                                   eos_token_id=eos, pad_token_id=eos).numpy()  # fmt: skip
    np.testing.assert_array_equal(got, expected)
    end = 4 + list(free[0]).index(eos)  # where the first row ends
    np.testing.assert_array_equal(got[0, 4 : end + 1], free[0, : end - 3])  # unchanged to it
    assert (got[0, end:] == eos).all() and got.shape == (3, 14)  # then the end id, repeated
    with pytest.raises(ValueError, match="eos_token_id must be an id or a list of ids"):
        ours.generate(prompt, 3, eos_token_id="</s>")


def test_top_p_reaches_the_stream_and_the_sampler(tmp_path, capsys):
    """``top_p`` of ``GPT.stream`` and the sampler's ``--top-p``: a tiny nucleus is the
    greedy choice; a bad one is named, in one line at the command line."""
    _, directory = gpt2_dir(tmp_path / "gpt2")
    ours = GPT.from_pretrained(directory)
    prompt = np.random.default_rng(4).integers(1, 61, size=(2, 5))
    greedy = ours.generate(prompt, 6, temperature=0)
    nucleus = ours.generate(prompt, 6, temperature=1.0, top_p=1e-9,
                            rng=np.random.default_rng(0))  # fmt: skip
    np.testing.assert_array_equal(nucleus, greedy)
    with pytest.raises(ValueError, match="top_p"):
        ours.generate(prompt, 2, top_p=1.5)
    with pytest.raises(SystemExit):
        sample.main([str(directory), "--prompt", "x", "--top-p", "0"])
    assert "--top-p: must be a number in (0, 1]" in capsys.readouterr().err


def test_from_pretrained_and_save_pretrained_keep_the_token_ids(tmp_path):
    """The bos/eos ids a directory sets go out again with ``save_pretrained``."""
    _, directory = gpt2_dir(tmp_path / "gpt2", eos_token_id=[5, 7], bos_token_id=3)
    GPT.from_pretrained(directory).save_pretrained(tmp_path / "export")
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export")
    assert back.generation_config.eos_token_id == [5, 7] and back.config.bos_token_id == 3

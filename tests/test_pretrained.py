"""Other people's models (tricycle.pretrained, tricycle.hf_files): small random GPT-2 and
Llama models made by transformers load into tricycle with the same logits and the same greedy
tokens; tricycle's exports load back into transformers; bad files each get one line naming the
file and the tensor or field. transformers and torch are the oracles; no network."""

import json
import sys
import types

import numpy as np
import pytest

from tricycle import backend, hf_files, pretrained
from tricycle.loss import CrossEntropy
from tricycle.models import GPT, Llama
from tricycle.optimisers import AdamW
from tricycle.pretrained import PretrainedError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

VOCAB, WINDOW = 61, 64


def gpt2_model(**overrides):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=WINDOW, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0, initializer_range=0.3,
        **overrides,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config).eval()


def llama_model(tied: bool, **overrides):
    torch.manual_seed(1)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=WINDOW,
        tie_word_embeddings=tied, rms_norm_eps=1e-5, rope_theta=500.0, bos_token_id=0,
        eos_token_id=0, pad_token_id=None, initializer_range=0.3, **overrides,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


MODELS = {
    "gpt2": lambda: gpt2_model(),
    "llama-tied": lambda: llama_model(tied=True),
    "llama-untied": lambda: llama_model(tied=False),
}


def ids(batch=2, length=11, seed=0):
    return np.random.default_rng(seed).integers(0, VOCAB, size=(batch, length))


def close(actual, expected):
    """Equal to 1e-5 (float32 logits of a few units)."""
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def their_logits(model, tokens) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor(tokens)).logits.numpy()


@pytest.fixture(scope="module", params=list(MODELS))
def saved(request, tmp_path_factory):
    """(their model, the directory it was saved to)."""
    model = MODELS[request.param]()
    directory = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(directory)
    return model, directory


# ====================================================================== in and out


def test_their_model_loads_with_equal_logits_and_greedy_tokens(saved):
    model, directory = saved
    ours = GPT.from_pretrained(directory)
    assert type(ours) is (GPT if model.config.model_type == "gpt2" else Llama)
    tokens = ids()
    close(ours(tokens).array, their_logits(model, tokens))

    prompt = ids(1, 5, seed=3)
    with torch.no_grad():
        expected = model.generate(
            torch.tensor(prompt), max_new_tokens=32, min_new_tokens=32, do_sample=False,
            attention_mask=torch.ones_like(torch.tensor(prompt)),
        ).numpy()  # fmt: skip
    got = ours.generate(prompt, 32, temperature=0)
    np.testing.assert_array_equal(got, expected)


def test_our_export_loads_into_transformers_with_equal_logits(saved, tmp_path):
    model, directory = saved
    ours = GPT.from_pretrained(directory)
    ours.save_pretrained(tmp_path / "export")
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export").eval()
    tokens = ids(seed=5)
    close(their_logits(back, tokens), ours(tokens).array)
    # and once more through tricycle: the export reads back exactly
    again = GPT.from_pretrained(tmp_path / "export")
    for (name, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_a_fine_tuning_step_from_an_imported_model_lowers_the_loss(saved):
    _, directory = saved
    model = GPT.from_pretrained(directory)
    tokens = ids(4, 17, seed=7)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    optimiser = AdamW(learning_rate=1e-2)
    losses = []
    for _ in range(3):
        loss = CrossEntropy()(targets, model(inputs))
        loss.backward()
        model.update(optimiser)
        losses.append(float(loss.array))
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_sharded_and_bfloat16_files_load(tmp_path):
    model = llama_model(tied=False)
    model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    assert (tmp_path / "sharded" / hf_files.INDEX).is_file()
    tokens = ids()
    ours = GPT.from_pretrained(tmp_path / "sharded")
    close(ours(tokens).array, their_logits(model, tokens))

    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    widened = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "bf16", dtype=torch.float32
    ).eval()  # the bfloat16 weights, exactly, in float32 (and RoPE's tables in float32)
    ours = GPT.from_pretrained(tmp_path / "bf16")
    close(ours(tokens).array, their_logits(widened, tokens))


def test_a_failed_export_leaves_the_previous_one(tmp_path, monkeypatch):
    model = GPT.from_pretrained(_save(gpt2_model(), tmp_path / "theirs"))
    target = tmp_path / "export"
    model.save_pretrained(target)
    (target / "vocab.json").write_text("{}")  # a file of someone else's: kept
    before = {p.name: p.read_bytes() for p in target.iterdir()}

    def broken(value):
        raise OSError("disk full")

    monkeypatch.setattr(pretrained, "_json", broken)
    with pytest.raises(OSError, match="disk full"):
        model.save_pretrained(target)
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "theirs"]  # no temporaries

    monkeypatch.undo()
    model.save_pretrained(target)  # over an existing export: the other file moves across
    assert (target / "vocab.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "theirs"]


def test_the_weights_load_without_the_safetensors_package(tmp_path, monkeypatch):
    """hf_files maps the tensors' bytes itself where the safetensors package is missing (the
    project's [test] install): the same weights, bit for bit."""
    from tricycle.configs import DebugConfig

    model = GPT(DebugConfig(embedding_dim=8, n_heads=2, n_layers=1, context_window=8,
                            vocab_size=16))  # fmt: skip
    model.save_pretrained(tmp_path / "ours")
    monkeypatch.setitem(sys.modules, "safetensors", None)  # import safetensors: ImportError
    loaded = GPT.from_pretrained(tmp_path / "ours")
    for (name, p), (_, q) in zip(model.named_parameters(), loaded.named_parameters()):
        assert np.array_equal(p.array, q.array), name
        assert q.array.flags.writeable, name  # an optimiser updates them in place


# ====================================================================== bad files


def _save(model, directory):
    model.save_pretrained(directory)
    return directory


def _one_line_error(directory, *fragments):
    with pytest.raises(PretrainedError) as error:
        GPT.from_pretrained(directory)
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def _rewrite(directory, change):
    """Rewrite model.safetensors with ``change(tensors)`` applied."""
    from safetensors.numpy import load_file, save_file

    path = directory / hf_files.WEIGHTS
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, {"format": "pt"})
    return path


def test_a_truncated_file_names_the_file_and_the_tensor(tmp_path):
    directory = _save(gpt2_model(), tmp_path / "m")
    path = directory / hf_files.WEIGHTS
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    _one_line_error(directory, str(path), "truncated", "tensor 'transformer.")
    path.write_bytes(data[:5])
    _one_line_error(directory, str(path), "truncated")


def test_missing_extra_misshapen_and_integer_tensors_are_named(tmp_path):
    directory = _save(llama_model(tied=False), tmp_path / "m")
    name = "model.layers.1.self_attn.k_proj.weight"
    original = {}

    def keep(t):
        original.update(t)

    path = _rewrite(directory, keep)

    _rewrite(directory, lambda t: t.pop(name))
    _one_line_error(directory, str(path), name, "missing")

    extra = {name: original[name], "model.extra.weight": original[name]}
    _rewrite(directory, lambda t: t.update(extra))
    _one_line_error(directory, str(path), "model.extra.weight", "extra")

    _rewrite(directory, lambda t: t.pop("model.extra.weight"))
    _rewrite(directory, lambda t: t.update({name: original[name][:-1]}))
    _one_line_error(directory, str(path), name, "shape (15, 32)", "expected (16, 32)")

    _rewrite(directory, lambda t: t.update({name: original[name].astype(np.int32)}))
    _one_line_error(directory, str(path), name, "dtype I32")


def test_config_fields_tricycle_cannot_express_are_named(tmp_path):
    directory = _save(llama_model(tied=True), tmp_path / "m")
    config_path = directory / "config.json"
    good = json.loads(config_path.read_text())
    for change, fragments in [
        ({"model_type": "mamba"}, ["model_type 'mamba'"]),
        ({"mlp_bias": True}, ["mlp_bias=True"]),
        ({"hidden_act": "gelu_fast"}, ["hidden_act='gelu_fast'"]),
        ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1.0}}, ["rope_type='yarn'"]),
        ({"num_hidden_layers": "two"}, ["'num_hidden_layers'"]),
    ]:
        config_path.write_text(json.dumps({**good, **change}))
        _one_line_error(directory, str(config_path), *fragments)
    config_path.write_text("{not json")
    _one_line_error(directory, str(config_path), "JSON")


def test_a_pickle_only_checkpoint_is_refused_unread(tmp_path):
    directory = tmp_path / "m"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(gpt2_model().config.to_dict()))
    # a pickle that would run code if it were loaded
    (directory / "pytorch_model.bin").write_bytes(b"cos\nsystem\n(S'touch pwned'\ntR.")
    _one_line_error(directory, "pytorch_model.bin", "never unpickles")
    assert not (tmp_path / "pwned").exists()


def test_the_wrong_class_and_a_hub_name_offline_give_one_line(tmp_path, monkeypatch):
    directory = _save(gpt2_model(), tmp_path / "m")
    with pytest.raises(ValueError, match="use GPT.from_pretrained"):
        Llama.from_pretrained(directory)

    def offline(*args, **kwargs):
        raise OSError("cannot reach huggingface.co")

    monkeypatch.setitem(sys.modules, "huggingface_hub",
                        types.SimpleNamespace(snapshot_download=offline))  # fmt: skip
    _one_line_error("gpt2-nowhere", "'gpt2-nowhere'", "pass a local directory")
    fetched = []

    def download(name, allow_patterns):  # online: the files land in the hub's cache
        fetched.append((name, allow_patterns))
        return str(directory)

    monkeypatch.setitem(sys.modules, "huggingface_hub",
                        types.SimpleNamespace(snapshot_download=download))  # fmt: skip
    assert isinstance(GPT.from_pretrained("openai-community/gpt2"), GPT)
    assert fetched[0][0] == "openai-community/gpt2"
    assert "*.bin" not in fetched[0][1] and "*.safetensors" in fetched[0][1]  # no pickles
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    _one_line_error("gpt2-nowhere", "huggingface_hub", "pass a local directory")


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_kv_cache_generation_on_a_gpu(saved, cp, dtype):
    _, directory = saved
    model = GPT.from_pretrained(directory)
    prompt = ids(3, 5, seed=4)
    expected = model.generate(prompt, 16, temperature=0)
    model.to_gpu()
    if dtype == "bfloat16":  # an inference copy in bfloat16: the KV caches follow the weights
        from tricycle.precision import bfloat16

        for _, tensor in model.named_tensors():
            tensor.array = tensor.array.astype(bfloat16())
    got = model.generate(prompt, 16, temperature=0)
    if dtype == "float32":
        np.testing.assert_array_equal(got, expected)
    else:  # rounding may flip a near tie later on; the first new tokens agree
        np.testing.assert_array_equal(got[:, :6], expected[:, :6])
        sampled = model.generate(prompt, 8, top_k=5, rng=np.random.default_rng(0))
        assert sampled.shape == (3, 13) and (sampled < VOCAB).all()

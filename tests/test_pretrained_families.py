"""More people's models (tricycle.hf_configs, tricycle.pretrained): Llama 3.1's scaled RoPE
("llama3"), linear RoPE scaling, Llama's attention biases, Qwen2 (q/k/v biases, a tied head)
and Mistral (a sliding window that covers the context). Tiny random models made by
transformers load into tricycle with its logits and its greedy tokens, and tricycle's
exports load back into transformers as the same family with the same logits. transformers
and torch are the oracles; no network."""

import json
import math

import numpy as np
import pytest

from tricycle import backend, hf_configs
from tricycle.attention import check_rope_scaling, rope_frequencies
from tricycle.configs import GPTConfig
from tricycle.loss import CrossEntropy
from tricycle.models import GPT, Llama
from tricycle.pretrained import PretrainedError, write

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

VOCAB, WINDOW = 61, 64
# Llama 3.1's scaling squeezed to a tiny model: with head size 16, base 500 and a pre-training
# context of 32, the fastest frequency is kept, the next two are blended and the rest slowed
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 32}  # fmt: skip


def family(kind: str, **overrides):
    """A random transformers model of ``kind`` (its attention biases, and Qwen3's q_norm and
    k_norm gains, drawn too: transformers starts them at zero and one, which would test
    nothing)."""
    torch.manual_seed(0)
    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
    }[kind]
    fields = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=WINDOW,
                  rms_norm_eps=1e-5, rope_theta=500.0, initializer_range=0.3, bos_token_id=0,
                  eos_token_id=None, pad_token_id=None)  # fmt: skip
    # no end id: generate's min_new_tokens would forbid it, where tricycle's argmax may take it
    overrides = {k: dict(v) if isinstance(v, dict) else v for k, v in overrides.items()}
    model = model_class(config_class(**{**fields, **overrides})).eval()  # (it fills dicts in)
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if name.endswith(("q_norm.weight", "k_norm.weight")):  # Qwen3's, at one
                tensor.normal_(1, 0.3)
            elif name.endswith("proj.bias"):
                tensor.normal_(0, 0.3)
    return model


FAMILIES = {  # name: (their model, tricycle's rope_scaling and attention_bias)
    "llama3-rope": (lambda: family("llama", rope_scaling=LLAMA3), LLAMA3, "none"),
    "linear-rope": (lambda: family("llama", rope_scaling={"type": "linear", "factor": 2.0},
                                   tie_word_embeddings=True),  # fmt: skip
                    {"rope_type": "linear", "factor": 2.0}, "none"),
    "llama-bias": (lambda: family("llama", attention_bias=True), None, "all"),
    "qwen2": (lambda: family("qwen2", tie_word_embeddings=True), None, "qkv"),
    "mistral": (lambda: family("mistral", sliding_window=WINDOW), None, "none"),
}


def ids(batch=2, length=40, seed=0):
    """Token ids; 40 positions reach past LLAMA3's pre-training context of 32."""
    return np.random.default_rng(seed).integers(0, VOCAB, size=(batch, length))


def close(actual, expected):
    """Equal to 1e-4 (float32 logits of a few units; transformers' RoPE angles are float32)."""
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def their_logits(model, tokens) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor(tokens)).logits.numpy()


@pytest.fixture(scope="module", params=list(FAMILIES))
def saved(request, tmp_path_factory):
    """(their model, the directory it was saved to, (rope_scaling, attention_bias))."""
    make, scaling, bias = FAMILIES[request.param]
    model = make()
    directory = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(directory)
    return model, directory, (scaling, bias)


# ====================================================================== in and out


def test_their_model_loads_with_equal_logits_and_greedy_tokens(saved):
    model, directory, expected_fields = saved
    ours = GPT.from_pretrained(directory)
    assert type(ours) is Llama
    assert (ours.config.rope_scaling, ours.config.attention_bias) == expected_fields
    tokens = ids()
    close(ours(tokens).array, their_logits(model, tokens))

    prompt = ids(1, 5, seed=3)
    with torch.no_grad():
        expected = model.generate(
            torch.tensor(prompt), max_new_tokens=40, min_new_tokens=40, do_sample=False,
            attention_mask=torch.ones_like(torch.tensor(prompt)),
        ).numpy()  # fmt: skip
    np.testing.assert_array_equal(ours.generate(prompt, 40, temperature=0), expected)


def test_our_export_loads_back_as_the_same_family_with_equal_logits(saved, tmp_path):
    model, directory, _ = saved
    ours = GPT.from_pretrained(directory)
    ours.save_pretrained(tmp_path / "export")
    written = json.loads((tmp_path / "export" / "config.json").read_text())
    assert written["model_type"] == model.config.model_type
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "export").eval()
    assert type(back) is type(model)
    tokens = ids(seed=5)
    close(their_logits(back, tokens), ours(tokens).array)
    again = GPT.from_pretrained(tmp_path / "export")  # and through tricycle: exactly
    assert again.config == ours.config
    for (name, a), (_, b) in zip(ours.state_dict().items(), again.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_gradients_through_the_attention_biases_equal_torch(tmp_path):
    """A Qwen2's loss and its gradients (the q|k|v biases, stacked as tricycle stacks them,
    and the tied embedding) are torch's."""
    model = family("qwen2", tie_word_embeddings=True)
    model.save_pretrained(tmp_path)
    tokens = ids(2, 12, seed=9)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    logits = model(torch.tensor(inputs)).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                             torch.tensor(targets).reshape(-1))  # fmt: skip
    loss.backward()

    ours = GPT.from_pretrained(tmp_path)
    our_loss = CrossEntropy()(targets, ours(inputs))
    our_loss.backward()
    np.testing.assert_allclose(float(our_loss.array), loss.item(), rtol=1e-5)
    for i, block in enumerate(ours.blocks):
        attention = model.model.layers[i].self_attn
        expected = torch.cat([attention.q_proj.bias.grad, attention.k_proj.bias.grad,
                              attention.v_proj.bias.grad]).numpy()  # fmt: skip
        # float32 sums in another order on other BLAS: atol 1e-4 of the largest gradient
        np.testing.assert_allclose(_grad(block.attention.qkv_projection.bias), expected,
                                   rtol=1e-4, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(_grad(ours.token_embedding.weights),
                               model.model.embed_tokens.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-5)  # fmt: skip


def _grad(tensor) -> np.ndarray:
    return np.asarray(getattr(tensor.grad, "array", tensor.grad))


# ====================================================================== RoPE scaling


@pytest.mark.parametrize("scaling", [
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},  # Llama 3.1's own
    {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 8192},  # Llama 3.2's
    {"rope_type": "linear", "factor": 4.0},
])  # fmt: skip
def test_the_frequencies_are_transformers_at_llama_3_sizes(scaling):
    config = transformers.LlamaConfig(hidden_size=4096, num_attention_heads=32,
                                      max_position_embeddings=131072, rope_theta=500000.0,
                                      rope_scaling=dict(scaling))  # fmt: skip
    rope_init = transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS[scaling["rope_type"]]
    expected, attention_factor = rope_init(config, "cpu")
    got = rope_frequencies(np, 128, 500000.0, scaling)
    assert attention_factor == 1.0 and got.shape == (64,) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected.double().numpy(), rtol=2e-6)
    plain = rope_frequencies(np, 128, 500000.0)
    assert np.isclose(got[-1], plain[-1] / scaling["factor"])  # the slowest slowed by factor
    if scaling["rope_type"] == "llama3":
        assert (got <= plain).all() and got[0] == plain[0]  # slower, but the fastest kept


def test_llama3_scaling_blends_continuously_between_its_bands():
    """A frequency that turns at least high_freq_factor times in the pre-training context
    is kept, one that turns at most low_freq_factor times is slowed by factor, and between
    the two the blend is linear in the turns: continuous at both edges. (A head of size 2
    has the one frequency 1, which turns L / (2 pi) times in a context of L positions.)"""
    for turns, expected in [(3.0, 1), (2.0, 1), (1.5, 0.5 + 0.5 / 4), (1.0, 1 / 4), (0.5, 1 / 4)]:
        scaling = {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 2.0, "original_max_position_embeddings": 2 * math.pi *
                   turns}  # fmt: skip
        np.testing.assert_allclose(rope_frequencies(np, 2, 10.0, scaling), [expected], rtol=1e-12)


# ====================================================================== configs


def test_transformers_4_config_fields_read_as_5s(tmp_path):
    """rope_theta beside rope_scaling ({"type": ...}, transformers 4) reads as
    rope_parameters (5); both are written, and read back the same."""
    model = family("llama", rope_scaling=LLAMA3)
    model.config.save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    five = json.loads(path.read_text())
    expected = hf_configs.read_config(tmp_path)
    assert expected.rope_scaling == LLAMA3 and expected.rope_theta == 500.0
    old = {k: v for k, v in five.items() if k != "rope_parameters"}
    by_type = {"type" if k == "rope_type" else k: v for k, v in LLAMA3.items()}
    for scaling in (LLAMA3, by_type):
        path.write_text(json.dumps({**old, "rope_theta": 500.0, "rope_scaling": scaling}))
        assert hf_configs.read_config(tmp_path) == expected
    no_context = {k: v for k, v in LLAMA3.items() if k != "original_max_position_embeddings"}
    path.write_text(json.dumps({**old, "rope_theta": 500.0, "rope_scaling": no_context}))
    assert hf_configs.read_config(tmp_path).rope_scaling == {  # transformers' default
        **LLAMA3, "original_max_position_embeddings": WINDOW}
    written = hf_configs.hf_config(expected, 80)
    assert written["rope_scaling"] == LLAMA3
    assert written["rope_parameters"] == {**LLAMA3, "rope_theta": 500.0}


def test_what_tricycle_cannot_express_is_one_line(tmp_path):
    family("llama").config.save_pretrained(tmp_path / "llama")
    family("qwen2").config.save_pretrained(tmp_path / "qwen2")
    family("mistral").config.save_pretrained(tmp_path / "mistral")
    yarn = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 500.0}
    for kind, change, fragments in [
        ("llama", {"rope_parameters": yarn}, ["rope_parameters.rope_type='yarn'"]),
        ("llama", {"rope_parameters": None, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
         ["rope_scaling.rope_type='dynamic'"]),
        ("llama", {"rope_parameters": {**LLAMA3, "low_freq_factor": 4.0}},
         ["rope_parameters must be", "low_freq_factor < high_freq_factor"]),
        ("llama", {"rope_parameters": {"rope_type": "linear"}}, ["rope_parameters must be"]),
        ("llama", {"partial_rotary_factor": 0.5}, ["partial_rotary_factor=0.5"]),
        ("llama", {"mlp_bias": True}, ["mlp_bias=True"]),
        ("llama", {"attention_bias": "yes"}, ["'attention_bias'"]),
        ("mistral", {"sliding_window": 16}, ["sliding_window=16", "max_position_embeddings=64"]),
        ("qwen2", {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 1,
                   "layer_types": None}, ["sliding_window=16"]),
        ("qwen2", {"use_sliding_window": True, "sliding_window": 16,
                   "layer_types": ["full_attention", "sliding_attention"]}, ["sliding_window=16"]),
    ]:  # fmt: skip
        path = tmp_path / kind / "config.json"
        good = json.loads(path.read_text())
        path.write_text(json.dumps({**good, **change}))
        with pytest.raises(PretrainedError) as error:
            hf_configs.read_config(tmp_path / kind)
        message = str(error.value)
        assert "\n" not in message and str(path) in message, message
        for fragment in fragments:
            assert fragment in message, message
        path.write_text(json.dumps(good))
    # a sliding window that covers the context is plain causal attention: these load
    for kind, change in [
        ("mistral", {"sliding_window": WINDOW}), ("mistral", {"sliding_window": None}),
        ("qwen2", {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 2,
                   "layer_types": None}),
        ("qwen2", {"use_sliding_window": False, "sliding_window": 16}),
    ]:  # fmt: skip
        path = tmp_path / kind / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
        assert hf_configs.read_config(tmp_path / kind).context_window == WINDOW


def test_a_model_type_is_written_only_where_it_holds_the_model(tmp_path):
    base = dict(arch="llama", embedding_dim=32, n_heads=4, n_layers=1, vocab_size=50,
                context_window=16)  # fmt: skip
    for bias, kind, written in [("qkv", None, "qwen2"), ("all", None, "llama"),
                                ("none", "mistral", "mistral"), ("none", "llama", "llama")]:
        config = GPTConfig(**base, attention_bias=bias)
        write(tmp_path / "ok", config, Llama(config).state_dict(), kind=kind)
        assert hf_configs.model_type(tmp_path / "ok") == written
        assert hf_configs.read_config(tmp_path / "ok").attention_bias == bias
    for bias, kind in [("qkv", "llama"), ("qkv", "mistral"), ("all", "qwen2"), ("none", "qwen2"),
                       ("none", "gpt2"), ("none", "mamba")]:  # fmt: skip
        config = GPTConfig(**base, attention_bias=bias)
        with pytest.raises(PretrainedError, match=f"attention_bias='{bias}' cannot be written "
                           f"as model_type '{kind}'"):  # fmt: skip
            write(tmp_path / "no", config, Llama(config).state_dict(), kind=kind)
        assert not (tmp_path / "no").exists()


def test_the_new_config_fields_default_off_and_round_trip():
    old = GPTConfig(arch="llama").to_dict()
    for field in ("rope_scaling", "attention_bias"):
        del old[field]  # a config saved before the fields existed
    assert GPTConfig.from_dict(old) == GPTConfig(arch="llama")
    assert (GPTConfig().rope_scaling, GPTConfig().attention_bias) == (None, "none")
    config = GPTConfig(arch="llama", rope_scaling=dict(LLAMA3), attention_bias="qkv")
    assert GPTConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ValueError, match="rope_scaling and attention_bias are arch='llama'"):
        GPTConfig(rope_scaling={"rope_type": "linear", "factor": 2.0})
    with pytest.raises(ValueError, match="rope_scaling and attention_bias are arch='llama'"):
        GPTConfig(attention_bias="qkv")
    for bad, error in [({"rope_type": "linear", "factor": -1}, ValueError),
                       ({"rope_type": "linear", "factor": 2, "extra": 1}, ValueError),
                       ({"rope_type": "dynamic", "factor": 2}, ValueError),
                       ({**LLAMA3, "factor": math.inf}, ValueError), ("linear", TypeError)]:
        with pytest.raises(error, match=r"^GPTConfig: rope_scaling must be None or"):
            GPTConfig(arch="llama", rope_scaling=bad)
    assert check_rope_scaling("f", "s", LLAMA3) is LLAMA3


# ====================================================================== on a GPU


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_kv_cache_generation_on_a_gpu(saved, cp):
    """The GPU's decode steps (positions counted on the device, a recorded graph) rotate
    with the scaled frequencies and add the biases as the CPU does."""
    _, directory, _ = saved
    model = GPT.from_pretrained(directory)
    prompt = ids(3, 5, seed=4)
    expected = model.generate(prompt, 40, temperature=0)
    model.to_gpu()
    np.testing.assert_array_equal(model.generate(prompt, 40, temperature=0), expected)
    close(backend.to_host_array(model(prompt).array), model.from_gpu()(prompt).array)

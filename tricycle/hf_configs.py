"""config.json in and out: a Hugging Face family's fields as a ``GPTConfig``, and back.

A family is a ``model_type`` of ``config.json`` and the tricycle ``arch`` that builds it:

    gpt2     GPT: learnt positions, LayerNorm, GeLU MLP, biases everywhere
    llama    Llama: RoPE (as read, or scaled: ``rope_scaling``), RMSNorm, SwiGLU, grouped-query
             attention; ``attention_bias`` puts biases in its four attention projections
             (attention_bias="all")
    qwen2    Llama with biases in q, k and v alone, always (attention_bias="qkv")
    qwen3    Llama with an RMSNorm on each query and key head (qk_norm) and its own head size
             (head_dim, 128 where config.json says none); attention_bias as Llama's
    mistral  Llama whose attention looks back at most ``sliding_window`` positions: plain
             causal attention wherever the window covers the whole context

Transformers 4 wrote RoPE's settings as ``rope_theta`` and ``rope_scaling`` ({"type" or
"rope_type", "factor", ...}); 5 writes ``rope_parameters``, which holds ``rope_theta`` too.
Both are read, and both are written, so that either version opens an export. Every Llama
family may give ``head_dim``, a head size apart from hidden_size / num_attention_heads.

Anything a config says that the model cannot express (another RoPE scaling, MLP biases, a
sliding window shorter than the context, ...) is a one-line ``PretrainedError`` naming the
file and the field. ``hf_config`` writes the model_type a model was read as, or for a new one
its arch's ("qwen3" where the heads are normalised, "qwen2" where only q, k and v have
biases).
"""

from pathlib import Path

from tricycle import checks
from tricycle.attention import ROPE_SCALINGS, check_rope_scaling
from tricycle.configs import GPTConfig
from tricycle.hf_files import CONFIG, PretrainedError, read_json

__all__ = ["ARCHITECTURES", "hf_config", "model_type", "read_config"]

# model_type: (the transformers class, tricycle's arch, the attention biases it can hold)
FAMILIES = {
    "gpt2": ("GPT2LMHeadModel", "gpt2", ("none",)),
    "llama": ("LlamaForCausalLM", "llama", ("none", "all")),
    "qwen2": ("Qwen2ForCausalLM", "llama", ("qkv",)),
    "qwen3": ("Qwen3ForCausalLM", "llama", ("none", "all")),
    "mistral": ("MistralForCausalLM", "llama", ("none",)),
}
ARCHITECTURES = {kind: family[0] for kind, family in FAMILIES.items()}
# config.json's activation names <-> tricycle's
_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
                "relu": "relu", "silu": "silu", "swish": "silu"}  # fmt: skip


# ------------------------------------------------------------------ reading


def model_type(directory) -> str:
    """The ``model_type`` of ``directory``'s config.json: one of ``FAMILIES``."""
    path = Path(directory) / CONFIG
    return _model_type(read_json(path), path)


def read_config(directory) -> GPTConfig:
    """The ``GPTConfig`` of the model in ``directory`` (its ``config.json``)."""
    path = Path(directory) / CONFIG
    hf = read_json(path)
    kind = _model_type(hf, path)
    if kind == "gpt2":
        return _gpt2_config(_Fields(hf, path))
    return _llama_config(_Fields(hf, path), kind)


def _model_type(hf: dict, path: Path) -> str:
    kind = hf.get("model_type")
    if kind not in FAMILIES:
        raise PretrainedError(
            f"{path}: model_type {kind!r} is not one tricycle builds "
            f"(one of {', '.join(map(repr, FAMILIES))})"
        )
    return kind


class _Fields:
    """config.json's fields, read with a one-line error naming the file and the field."""

    def __init__(self, values: dict, path: Path):
        self.values, self.path = values, path

    def get(self, name: str, default=None, kinds=(int,)):
        value = self.values.get(name, default)
        if value is None and default is None:
            raise PretrainedError(f"{self.path}: the field {name!r} is missing")
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            raise PretrainedError(f"{self.path}: field {name!r} is {value!r}, expected {kinds}")
        return value

    def require(self, name: str, expected, default) -> None:
        """A field tricycle's model cannot change: it must be ``expected``."""
        value = self.values.get(name, default)
        if value != expected:
            raise PretrainedError(
                f"{self.path}: {name}={value!r} is a variant tricycle cannot express "
                f"(it needs {name}={expected!r})"
            )

    def activation(self, name: str, default: str) -> str:
        value = self.values.get(name, default)
        if value not in _ACTIVATIONS:
            raise PretrainedError(
                f"{self.path}: {name}={value!r} is an activation tricycle lacks "
                f"(one of {', '.join(_ACTIVATIONS)})"
            )
        return _ACTIVATIONS[value]


def _gpt2_config(f: _Fields) -> GPTConfig:
    for name, expected in [("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx",
                           False), ("add_cross_attention", False)]:  # fmt: skip
        f.require(name, expected, expected)
    E = f.get("n_embd")
    inner = f.values.get("n_inner") or 4 * E
    if int(E * (inner / E)) != inner:
        raise PretrainedError(f"{f.path}: n_inner={inner} is not a width tricycle can build")
    return GPTConfig(
        arch="gpt2",
        vocab_size=f.get("vocab_size"),
        context_window=f.get("n_positions"),
        embedding_dim=E,
        n_heads=f.get("n_head"),
        n_layers=f.get("n_layer"),
        expansion_ratio=inner / E,
        activation_fn=f.activation("activation_function", "gelu_new"),
        dropout=f.get("resid_pdrop", 0.1, (int, float)),
        norm_eps=f.get("layer_norm_epsilon", 1e-5, (int, float)),
        tie_weights=f.get("tie_word_embeddings", True, (bool,)),
        bias=True,
    )


def _llama_config(f: _Fields, kind: str) -> GPTConfig:
    """A Llama, Qwen2, Qwen3 or Mistral config (``kind``): Llama's fields, and each one's
    own."""
    f.require("hidden_act", "silu", "silu")
    bias = "qkv" if kind == "qwen2" else "none"  # Qwen2 and Mistral read no bias field
    if kind == "llama":
        f.require("mlp_bias", False, False)
    if kind in ("llama", "qwen3"):
        bias = "all" if f.get("attention_bias", False, (bool,)) else "none"
    E, heads = f.get("hidden_size"), f.get("num_attention_heads")
    # transformers' head size: config.json's, else Qwen3Config's default, else E / heads
    D = 128 if kind == "qwen3" else E // heads
    D = D if f.values.get("head_dim") is None else f.get("head_dim")
    context, hidden = f.get("max_position_embeddings"), f.get("intermediate_size")
    _check_sliding_window(f, kind, context)
    theta, scaling = _rope(f, context)
    return GPTConfig(
        arch="llama",
        vocab_size=f.get("vocab_size"),
        context_window=context,
        embedding_dim=E,
        n_heads=heads,
        n_kv_heads=f.values.get("num_key_value_heads") or heads,
        n_layers=f.get("num_hidden_layers"),
        # llama_hidden_size rounds 2/3 * ratio * E up to a multiple of ffn_multiple_of: with
        # the multiple equal to the width, it gives exactly intermediate_size
        expansion_ratio=1.5 * hidden / E,
        ffn_multiple_of=hidden,
        rope_theta=theta,
        rope_scaling=scaling,
        attention_bias=bias,
        head_dim=None if D * heads == E else D,  # None: E / heads, as every older config
        qk_norm=kind == "qwen3",
        dropout=f.get("attention_dropout", 0.0, (int, float)),
        norm_eps=f.get("rms_norm_eps", 1e-6, (int, float)),
        tie_weights=f.get("tie_word_embeddings", False, (bool,)),
    )


def _check_sliding_window(f: _Fields, kind: str, context: int) -> None:
    """Refuse a sliding window shorter than the context: a query at position q sees the keys
    after q - sliding_window, which within a context no longer than the window is every key
    up to q, tricycle's causal attention. Qwen2 and Qwen3 slide only with use_sliding_window, in the
    layers that ``layer_types`` names (else those from max_window_layers on)."""
    window = f.values.get("sliding_window") if kind in ("mistral", "qwen2", "qwen3") else None
    if kind in ("qwen2", "qwen3") and window is not None:
        n = f.get("num_hidden_layers")
        types = f.values.get("layer_types") or [
            "sliding_attention" if i >= f.get("max_window_layers", n) else "full_attention"
            for i in range(n)
        ]  # fmt: skip
        if not f.values.get("use_sliding_window") or "sliding_attention" not in types:
            window = None
    if window is not None and f.get("sliding_window") < context:
        raise PretrainedError(
            f"{f.path}: sliding_window={window} is shorter than max_position_embeddings="
            f"{context}: tricycle's attention sees the whole context, and a query here sees only "
            f"the last {window} keys (a window that covers the context loads)"
        )


def _rope(f: _Fields, context: int) -> tuple[float, dict | None]:
    """(rope_theta, rope_scaling) of a Llama-family config, in either version's fields."""
    field = "rope_parameters" if f.values.get("rope_parameters") else "rope_scaling"
    params = f.values.get(field) or {}
    if not isinstance(params, dict):
        raise PretrainedError(f"{f.path}: field {field!r} is {params!r}, expected an object")
    theta = params.get("rope_theta", f.values.get("rope_theta", 10000.0))
    if not checks.is_real(theta) or not theta > 0:
        raise PretrainedError(f"{f.path}: rope_theta={theta!r} is not a number > 0")
    partial = params.get("partial_rotary_factor", f.values.get("partial_rotary_factor", 1.0))
    if partial != 1:
        raise PretrainedError(
            f"{f.path}: partial_rotary_factor={partial!r} is a variant tricycle cannot "
            "express (it rotates whole heads: 1.0)"
        )
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "default":
        return float(theta), None
    if kind not in ROPE_SCALINGS:
        raise PretrainedError(
            f"{f.path}: {field}.rope_type={kind!r} is a variant tricycle cannot express (one "
            f"of 'default', {', '.join(map(repr, ROPE_SCALINGS))})"
        )
    params = {"original_max_position_embeddings": context, **params}  # transformers' default
    scaling = {"rope_type": kind, **{name: params.get(name) for name in ROPE_SCALINGS[kind]}}
    try:
        check_rope_scaling(str(f.path), field, scaling)
    except (TypeError, ValueError) as error:
        raise PretrainedError(str(error)) from None
    return float(theta), scaling


# ------------------------------------------------------------------ writing


def hf_config(config: GPTConfig, hidden: int, kind: str | None = None) -> dict:
    """config.json for ``config`` (``hidden``: the MLP's width) as model_type ``kind`` (None:
    the arch's own, "qwen3" for a Llama with qk_norm, "qwen2" for one with biases in q, k and
    v alone)."""
    E, eps, arch = config.embedding_dim, config.norm_epsilon, config.arch
    bias, qk_norm = config.attention_bias, config.qk_norm
    kind = kind or ("qwen3" if qk_norm else "qwen2" if bias == "qkv" else arch)
    _, family_arch, biases = FAMILIES.get(kind, (None, None, ()))
    if family_arch != arch or bias not in biases or qk_norm != (kind == "qwen3"):
        holds = "; ".join(f"{k}: arch={a!r}, attention_bias in {b}" for k, (_, a, b) in
                          FAMILIES.items())  # fmt: skip
        raise PretrainedError(
            f"save_pretrained: a model of arch={arch!r}, qk_norm={qk_norm}, with attention_bias="
            f"{bias!r} cannot be written as model_type {kind!r} ({holds}; qk_norm: qwen3's alone)"
        )
    common = {"architectures": [ARCHITECTURES[kind]], "model_type": kind, "torch_dtype":
              "float32", "vocab_size": config.vocab_size, "tie_word_embeddings":
              config.tie_weights}  # fmt: skip
    if arch == "gpt2":
        names = {v: k for k, v in _ACTIVATIONS.items() if k in ("gelu_new", "gelu", "relu",
                                                                "silu")}  # fmt: skip
        p = config.dropout
        return {**common, "n_positions": config.context_window, "n_embd": E, "n_head":
                config.n_heads, "n_layer": config.n_layers, "n_inner": hidden,
                "activation_function": names[config.activation_fn], "resid_pdrop": p,
                "embd_pdrop": p, "attn_pdrop": p, "layer_norm_epsilon": eps}  # fmt: skip
    theta, scaling = config.rope_theta, config.rope_scaling
    own = {"llama": {"attention_bias": bias == "all", "mlp_bias": False},
           "qwen2": {"use_sliding_window": False, "sliding_window": None,
                     "max_window_layers": config.n_layers},
           "qwen3": {"attention_bias": bias == "all", "use_sliding_window": False,
                     "sliding_window": None, "max_window_layers": config.n_layers},
           "mistral": {"sliding_window": None}}  # fmt: skip
    return {**common, **own[kind], "max_position_embeddings": config.context_window,
            "hidden_size": E, "intermediate_size": hidden, "num_attention_heads":
            config.n_heads, "num_key_value_heads": config.kv_heads, "num_hidden_layers":
            config.n_layers, "head_dim": config.head_size, "hidden_act": "silu",
            "rms_norm_eps": eps, "rope_theta": theta, "rope_scaling": scaling,
            "rope_parameters": {**(scaling or {"rope_type": "default"}), "rope_theta": theta},
            "attention_dropout": config.dropout}  # fmt: skip

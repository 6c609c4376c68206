"""Model and training configurations for the GPT (and its Llama-style variant: ``arch``).

A config is a plain dataclass: the model reads the architecture fields, the training script
the rest. Pick one by name with ``get_config("shakespeare")`` (or ``--config shakespeare``).

Customise one by keyword (``GPTConfig(embedding_dim=128)``, ``dataclasses.replace``) or by
subclassing with plain class attributes, as the original tricycle's users do::

    class MyConfig(GPTConfig):
        embedding_dim = 128  # overrides the default: MyConfig().embedding_dim == 128

Every subclass is made a dataclass with its overrides as the new defaults (no decorator
needed). A class attribute that is not a field (a typo such as ``embeding_dim``) raises
TypeError when the class is defined; annotate it (``n_experts: int = 4``) to add a new field.
Setting an unknown attribute on a config raises AttributeError.

    DebugConfig            tiny: unit tests and smoke runs (seconds)
    CPUConfig              the default: visibly code-like Python in a few minutes on a laptop CPU
    ShakespeareConfig      the seed README's toy run, on a GPU
    ShakespeareCharConfig  nanoGPT's shakespeare-char recipe
    SmolGPTConfig          GPT-2 style hyper-parameters for a ~50M parameter model on a GPU
    GPT2Config             GPT-2 124M, the GPT-2 reproduction's recipe (one GPU, from shards)
"""

import dataclasses
import inspect
import math
from dataclasses import dataclass

from tricycle import checks
from tricycle.activation import ACTIVATIONS
from tricycle.attention import check_rope_scaling
from tricycle.tensor import parse_device

ARCHS = ("gpt2", "llama")  # see GPTConfig.arch
ATTENTION_BIASES = ("none", "qkv", "all")  # see GPTConfig.attention_bias


@checks.arguments(
    embedding_dim=checks.positive_int,
    expansion_ratio=checks.positive,
    multiple_of=checks.positive_int,
)
def llama_hidden_size(embedding_dim: int, expansion_ratio: float = 4, multiple_of: int = 64):
    """Llama's SwiGLU width: 2/3 of expansion_ratio * embedding_dim (three matrices instead of
    two, for about the same parameters), rounded up to a multiple of ``multiple_of``."""
    hidden = int(2 * expansion_ratio * embedding_dim / 3)
    return multiple_of * math.ceil(hidden / multiple_of)


@dataclass
class GPTConfig:
    """Every knob of the model and of its training run.

    Architecture: ``embedding_dim``, ``context_window``, ``vocab_size``, ``n_heads``,
    ``n_layers``, ``expansion_ratio`` (MLP width / embedding_dim), ``activation_fn``,
    ``dropout`` (embedding, attention-probability, residual and MLP dropout), ``tie_weights``
    (head shares the token embedding) and ``bias`` (biases in the Dense and LayerNorm layers,
    as nanoGPT's ``bias``).

    ``arch`` picks the model ``build_model`` makes: "gpt2" (``GPT``: learnt positions,
    LayerNorm, GeLU MLP) or "llama" (``Llama``: RoPE with base ``rope_theta``, grouped-query
    attention with ``n_kv_heads`` key/value heads (None: one per query head), RMSNorm, a
    SwiGLU MLP of width 2/3 * expansion_ratio * embedding_dim rounded up to a multiple of
    ``ffn_multiple_of``, no biases: ``bias`` and ``activation_fn`` are not used).
    Two llama fields, off by default, open other people's models: ``rope_scaling`` (None, or
    slower rotations for a longer context: ``tricycle.attention.ROPE_SCALINGS``, Llama 3.1's
    "llama3" or "linear") and ``attention_bias`` ("none"; "qkv": biases in the q|k|v
    projection, as Qwen2; "all": in the output projection too, as Llama's attention_bias);
    ``head_dim`` (None: embedding_dim / n_heads; else each head's size, q|k|v then n_heads *
    head_dim wide whatever embedding_dim is, as Qwen3) and ``qk_norm`` (an RMSNorm on each
    query and key head before RoPE, as Qwen3).
    ``norm_eps`` is the epsilon of every LayerNorm/RMSNorm (None: 1e-5 for "gpt2", as
    GPT-2, and 1e-6 for "llama").

    Training: ``batch_size`` sequences per micro-batch, ``gradient_accumulation_steps``
    micro-batches per optimiser step, a cosine learning-rate schedule from
    ``max_learning_rate`` to ``min_learning_rate`` over ``steps`` after ``warmup_steps`` of
    linear warm-up, AdamW (``beta1``, ``beta2``, ``eps``, ``weight_decay``; with
    ``decay_embeddings`` the embedding tables are decayed too, as nanoGPT), gradient clipping
    to global norm ``grad_clip`` (0 disables), validation every ``eval_interval`` steps over
    ``eval_steps`` batches (``eval_protocol`` "sequential": the validation windows in order,
    the same each time; "random": fresh random windows, as nanoGPT), and ``device`` ("cpu"
    or "gpu").
    """

    # model
    embedding_dim: int = 384
    context_window: int = 256
    vocab_size: int = 1024
    n_heads: int = 6
    n_layers: int = 6
    expansion_ratio: float = 4
    activation_fn: str = "gelu"
    dropout: float = 0.0
    tie_weights: bool = True
    bias: bool = True
    arch: str = "gpt2"
    n_kv_heads: int | None = None
    rope_theta: float = 10000.0
    ffn_multiple_of: int = 64
    norm_eps: float | None = None
    rope_scaling: dict | None = None
    attention_bias: str = "none"
    head_dim: int | None = None
    qk_norm: bool = False

    # training
    batch_size: int = 16
    gradient_accumulation_steps: int = 1
    max_learning_rate: float = 1e-3
    min_learning_rate: float = 1e-4
    warmup_steps: int = 100
    steps: int = 5000
    weight_decay: float = 0.1
    decay_embeddings: bool = False
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_steps: int = 20
    eval_protocol: str = "sequential"
    device: str = "cpu"

    def __init_subclass__(cls, **kwargs):
        """Make every subclass a dataclass whose plain class attributes override defaults."""
        super().__init_subclass__(**kwargs)
        fields = {f.name: f for f in dataclasses.fields(cls)}  # the inherited ones
        annotations = dict(inspect.get_annotations(cls))  # this class's own
        for name, value in list(vars(cls).items()):
            if name.startswith("_") or name in annotations or name.isupper():
                continue
            if name in fields:  # ``embedding_dim = 128``: the field with a new default
                annotations[name] = fields[name].type
            elif not (callable(value) or isinstance(value, (property, classmethod, staticmethod))):
                base = cls.__mro__[1].__name__
                raise TypeError(
                    f"{cls.__name__}: {name} = {value!r} is not a field of {base} (fields: "
                    f"{', '.join(fields)}); annotate it to add a new field"
                )
        cls.__annotations__ = annotations
        dataclass(cls)

    def __setattr__(self, name, value):
        if name not in self.__dataclass_fields__:
            raise AttributeError(
                f"{type(self).__name__} has no field {name!r}; fields: "
                f"{', '.join(self.__dataclass_fields__)}"
            )
        super().__setattr__(name, value)

    def __post_init__(self):
        owner = type(self).__name__
        for name, check in _FIELD_CHECKS.items():
            check(owner, name, getattr(self, name))
        if self.head_dim is None and self.embedding_dim % self.n_heads:
            raise ValueError(
                f"{owner}: embedding_dim={self.embedding_dim} is not divisible by "
                f"n_heads={self.n_heads} (an arch='llama' model may give head_dim instead)"
            )
        llama_only = dict(rope_scaling=None, attention_bias="none", head_dim=None, qk_norm=False)
        if self.arch == "gpt2" and any(getattr(self, k) != v for k, v in llama_only.items()):
            got = ", ".join(f"{k}={getattr(self, k)!r}" for k in llama_only)
            raise ValueError(
                f"{owner}: rope_scaling and attention_bias are arch='llama' fields, and so are "
                f"head_dim and qk_norm (bias sets all of a gpt2's biases), got {got}"
            )
        if self.arch == "llama":
            if self.n_heads % self.kv_heads:
                raise ValueError(
                    f"{owner}: n_heads={self.n_heads} must be a multiple of "
                    f"n_kv_heads={self.n_kv_heads}"
                )
            if self.head_size % 2:
                raise ValueError(f"{owner}: RoPE needs an even head size, got {self.head_size}")

    @property
    def head_size(self) -> int:
        """The size of one attention head: ``head_dim``, or embedding_dim / n_heads."""
        return self.embedding_dim // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def norm_epsilon(self) -> float:
        """The norms' epsilon: ``norm_eps``, or the architecture's default when it is None."""
        if self.norm_eps is not None:
            return self.norm_eps
        return 1e-6 if self.arch == "llama" else 1e-5

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or one per query head when it is None."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def hidden_size(self) -> int:
        """The MLP's width: ``llama_hidden_size`` of the SwiGLU for "llama", else
        ``expansion_ratio`` * ``embedding_dim``."""
        if self.arch == "llama":
            return llama_hidden_size(self.embedding_dim, self.expansion_ratio, self.ffn_multiple_of)
        return int(self.embedding_dim * self.expansion_ratio)

    @property
    def tokens_per_step(self) -> int:
        """Tokens consumed by one optimiser step."""
        return self.batch_size * self.gradient_accumulation_steps * self.context_window

    def to_dict(self) -> dict:
        """The fields as a JSON-able dict (the config's class name under "name")."""
        return {"name": type(self).__name__, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, values: dict) -> "GPTConfig":
        """Inverse of ``to_dict``: a GPTConfig with exactly these fields (unknown keys raise)."""
        values = {k: v for k, v in values.items() if k != "name"}
        known = {f.name for f in dataclasses.fields(GPTConfig)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"GPTConfig: unknown fields {sorted(unknown)}")
        return GPTConfig(**values)


def _device(owner: str, name: str, value):
    """The check of ``device``: a name ``parse_device`` reads ("cpu", "gpu", "cuda:1", ...)."""
    parse_device(value, owner)
    return value


_FIELD_CHECKS = dict(  # field -> the check of its value
    embedding_dim=checks.positive_int,
    context_window=checks.positive_int,
    vocab_size=checks.positive_int,
    n_heads=checks.positive_int,
    n_layers=checks.positive_int,
    expansion_ratio=checks.positive,
    activation_fn=checks.one_of(ACTIVATIONS),
    dropout=checks.probability,
    tie_weights=checks.boolean,
    bias=checks.boolean,
    arch=checks.one_of(ARCHS),
    n_kv_heads=checks.optional(checks.positive_int),
    rope_theta=checks.positive,
    ffn_multiple_of=checks.positive_int,
    norm_eps=checks.optional(checks.positive),
    rope_scaling=check_rope_scaling,
    attention_bias=checks.one_of(ATTENTION_BIASES),
    head_dim=checks.optional(checks.positive_int),
    qk_norm=checks.boolean,
    batch_size=checks.positive_int,
    gradient_accumulation_steps=checks.positive_int,
    max_learning_rate=checks.non_negative,
    min_learning_rate=checks.non_negative,
    warmup_steps=checks.non_negative_int,
    steps=checks.positive_int,
    weight_decay=checks.non_negative,
    decay_embeddings=checks.boolean,
    beta1=checks.probability,  # [0, 1), as Adam's betas
    beta2=checks.probability,
    eps=checks.positive,
    grad_clip=checks.non_negative,
    eval_interval=checks.positive_int,
    eval_steps=checks.positive_int,
    eval_protocol=checks.one_of(("sequential", "random")),
    device=_device,
)


# The named configs: each sets what differs from GPTConfig's defaults (print one for all).
class DebugConfig(GPTConfig):
    """Tiny: builds and trains in seconds. For tests and smoke runs."""

    embedding_dim = 32
    context_window = 32
    vocab_size = 300
    n_heads = 2
    n_layers = 2
    batch_size = 8
    max_learning_rate = 3e-3
    min_learning_rate = 3e-4
    warmup_steps = 10
    steps = 200
    eval_interval = 50
    eval_steps = 4


class CPUConfig(GPTConfig):
    """The default run: a 1024-token BPE GPT that writes code-like Python in a few minutes on
    a laptop's CPU (its time is in ``benchmarks/README.md``)."""

    embedding_dim = 128
    context_window = 64
    n_heads = 4
    n_layers = 4
    activation_fn = "gelu_tanh"  # GPT-2's GeLU: as good, and cheaper on a CPU
    max_learning_rate = 3e-3
    min_learning_rate = 3e-4
    warmup_steps = 50
    steps = 1000
    beta2 = 0.99
    eval_interval = 200
    eval_steps = 10


class ShakespeareConfig(GPTConfig):
    """The README's toy run: a small BPE GPT on tiny-shakespeare (GPTConfig's model: 6 layers
    of 6 heads, 384 wide, 256 tokens of context, 1024 ids)."""

    dropout = 0.2
    batch_size = 32
    beta2 = 0.99
    eval_steps = 50
    device = "gpu"


class ShakespeareCharConfig(GPTConfig):
    """nanoGPT's shakespeare-char recipe (vocab_size is set from the characters of the text).

    As nanoGPT's train.py: no biases (Dense and LayerNorm), and weight decay on every matrix,
    the (tied) token embedding and the position embedding included.
    """

    vocab_size = 65
    dropout = 0.2
    bias = False
    batch_size = 64
    decay_embeddings = True
    beta2 = 0.99
    eval_steps = 200
    eval_protocol = "random"  # nanoGPT's estimate_loss: 200 fresh random batches
    device = "gpu"


class SmolGPTConfig(GPTConfig):
    """GPT-2 style: the README's 49M parameter model, 0.5M-token steps by accumulation.

    lr 6e-4 with warm-up and cosine decay, betas (0.9, 0.95), weight decay 0.1, clip 1.0.
    """

    context_window = 1024
    vocab_size = 50304  # 50257 rounded up to a multiple of 128: faster matmuls
    tie_weights = False
    gradient_accumulation_steps = 32
    max_learning_rate = 6e-4
    min_learning_rate = 6e-5
    warmup_steps = 700
    steps = 19_000
    eval_interval = 500
    device = "gpu"


class GPT2Config(GPTConfig):
    """GPT-2 124M as in Karpathy's reproduction: 12 layers x 12 heads x 768, T = 1024,
    vocabulary 50,304 (50,257 padded to a multiple of 128), biases and a tied head as
    GPT-2, no dropout. About 0.5M tokens per step (16 x 1024 x 32 micro-batches at world size
    1), lr 6e-4 -> 6e-5 over 19,073 steps after 715 of warm-up (375M tokens, GPT-3's),
    AdamW (0.9, 0.95) with weight decay 0.1 on every matrix and embedding, clip 1.0. Run it
    with --precision bf16 on a GPU, from token shards (tricycle_datasets.prepare).
    """

    embedding_dim = 768
    context_window = 1024
    vocab_size = 50304
    n_heads = 12
    n_layers = 12
    activation_fn = "gelu_tanh"  # GPT-2's tanh approximation
    gradient_accumulation_steps = 32  # 16 * 1024 * 32 = 524,288 tokens per step
    max_learning_rate = 6e-4
    min_learning_rate = 6e-5
    warmup_steps = 715
    steps = 19_073
    decay_embeddings = True
    device = "gpu"


CONFIGS: dict[str, type[GPTConfig]] = {
    "debug": DebugConfig,
    "cpu": CPUConfig,
    "shakespeare": ShakespeareConfig,
    "shakespeare-char": ShakespeareCharConfig,
    "smol-gpt": SmolGPTConfig,
    "gpt2": GPT2Config,
}


@checks.arguments(name=checks.one_of(CONFIGS))
def get_config(name: str, **overrides) -> GPTConfig:
    """The config called ``name`` (see ``CONFIGS``), with some fields overridden."""
    return CONFIGS[name](**overrides)

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
    ShakespeareConfig      the README's toy run (~30 min on an RTX 3090)
    ShakespeareCharConfig  nanoGPT's shakespeare-char recipe
    SmolGPTConfig          GPT-2 style hyper-parameters for a ~50M parameter model on a GPU
    GPT2Config             GPT-2 124M, the GPT-2 reproduction's recipe (one GPU, from shards)
"""

import dataclasses
import inspect
import math
import numbers
from dataclasses import dataclass

from tricycle.tensor import parse_device

ARCHS = ("gpt2", "llama")  # see GPTConfig.arch


@dataclass
class GPTConfig:
    """Every knob of the model and of its training run.

    Architecture: ``embedding_dim``, ``context_window``, ``vocab_size``, ``n_heads``,
    ``n_layers``, ``expansion_ratio`` (MLP width / embedding_dim), ``activation_fn``,
    ``dropout`` (embedding, residual and MLP dropout), ``tie_weights`` (head shares the token
    embedding) and ``bias`` (biases in the Dense and LayerNorm layers, as nanoGPT's ``bias``).

    ``arch`` picks the model ``build_model`` makes: "gpt2" (``GPT``: learnt positions,
    LayerNorm, GeLU MLP) or "llama" (``Llama``: RoPE with base ``rope_theta``, grouped-query
    attention with ``n_kv_heads`` key/value heads (None: one per query head), RMSNorm, a
    SwiGLU MLP of width 2/3 * expansion_ratio * embedding_dim rounded up to a multiple of
    ``ffn_multiple_of``, no biases: ``bias`` and ``activation_fn`` are not used).

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
        for name in _POSITIVE_INTS + _NON_NEGATIVE_INTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{owner}: {name} must be an integer, got {value!r}")
            if value < (1 if name in _POSITIVE_INTS else 0):
                raise ValueError(
                    f"{owner}: {name} must be {'positive' if name in _POSITIVE_INTS else '>= 0'},"
                    f" got {value}"
                )
        for name, low, high, closed in _REAL_RANGES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
            above = low <= value if closed else low < value
            if not (math.isfinite(value) and above and value < high):
                bound = "[" if closed else "("
                raise ValueError(f"{owner}: {name} must be in {bound}{low}, {high}), got {value}")
        for name in ("tie_weights", "bias", "decay_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{owner}: {name} must be True or False, got {getattr(self, name)!r}"
                )
        if self.embedding_dim % self.n_heads:
            raise ValueError(
                f"{type(self).__name__}: embedding_dim={self.embedding_dim} is not divisible "
                f"by n_heads={self.n_heads}"
            )
        parse_device(self.device, owner)
        if self.arch not in ARCHS:
            raise ValueError(f"{owner}: arch must be one of {ARCHS}, got {self.arch!r}")
        if self.n_kv_heads is not None and (
            isinstance(self.n_kv_heads, bool) or not isinstance(self.n_kv_heads, numbers.Integral)
        ):
            raise TypeError(
                f"{owner}: n_kv_heads must be None or an integer, got {self.n_kv_heads!r}"
            )
        if self.arch == "llama":
            if self.kv_heads < 1 or self.n_heads % self.kv_heads:
                raise ValueError(
                    f"{owner}: n_heads={self.n_heads} must be a multiple of "
                    f"n_kv_heads={self.n_kv_heads}"
                )
            if self.head_dim % 2:
                raise ValueError(
                    f"{owner}: RoPE needs an even head size, got "
                    f"embedding_dim / n_heads = {self.head_dim}"
                )
        if self.eval_protocol not in ("sequential", "random"):
            raise ValueError(
                f"{type(self).__name__}: eval_protocol must be 'sequential' or 'random', got "
                f"{self.eval_protocol!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.embedding_dim // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or one per query head when it is None."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

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


_POSITIVE_INTS = (
    "embedding_dim", "context_window", "vocab_size", "n_heads", "n_layers", "batch_size",
    "gradient_accumulation_steps", "steps", "eval_interval", "eval_steps", "ffn_multiple_of",
)  # fmt: skip
_NON_NEGATIVE_INTS = ("warmup_steps",)
_REAL_RANGES = (  # (field, low, high, low included): each must lie in [low, high) or (low, high)
    ("expansion_ratio", 0, math.inf, False),
    ("dropout", 0, 1, True),
    ("max_learning_rate", 0, math.inf, True),
    ("min_learning_rate", 0, math.inf, True),
    ("weight_decay", 0, math.inf, True),
    ("beta1", 0, 1, True),
    ("beta2", 0, 1, True),
    ("eps", 0, math.inf, False),
    ("grad_clip", 0, math.inf, True),
    ("rope_theta", 0, math.inf, False),
)


@dataclass
class DebugConfig(GPTConfig):
    """Tiny: builds and trains in seconds. For tests and smoke runs."""

    embedding_dim: int = 32
    context_window: int = 32
    vocab_size: int = 300
    n_heads: int = 2
    n_layers: int = 2
    batch_size: int = 8
    max_learning_rate: float = 3e-3
    min_learning_rate: float = 3e-4
    warmup_steps: int = 10
    steps: int = 200
    grad_clip: float = 1.0
    eval_interval: int = 50
    eval_steps: int = 4


@dataclass
class CPUConfig(GPTConfig):
    """The default run: a 1024-token BPE GPT that writes code-like Python in ~3 min on 2 cores
    (~1M training tokens at ~6k tokens/s)."""

    embedding_dim: int = 128
    context_window: int = 64
    vocab_size: int = 1024
    n_heads: int = 4
    n_layers: int = 4
    activation_fn: str = "gelu_tanh"  # GPT-2's GeLU: as good, and cheaper on a CPU
    batch_size: int = 16
    max_learning_rate: float = 3e-3
    min_learning_rate: float = 3e-4
    warmup_steps: int = 50
    steps: int = 1000
    weight_decay: float = 0.1
    beta2: float = 0.99
    eval_interval: int = 200
    eval_steps: int = 10


@dataclass
class ShakespeareConfig(GPTConfig):
    """The README's toy run: a small BPE GPT on tiny-shakespeare."""

    embedding_dim: int = 384
    context_window: int = 256
    vocab_size: int = 1024
    n_heads: int = 6
    n_layers: int = 6
    dropout: float = 0.2
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    max_learning_rate: float = 1e-3
    min_learning_rate: float = 1e-4
    warmup_steps: int = 100
    steps: int = 5000
    beta2: float = 0.99
    eval_interval: int = 250
    eval_steps: int = 50
    device: str = "gpu"


@dataclass
class ShakespeareCharConfig(GPTConfig):
    """nanoGPT's shakespeare-char recipe (vocab_size is set from the characters of the text).

    As nanoGPT's train.py: no biases (Dense and LayerNorm), and weight decay on every matrix,
    the (tied) token embedding and the position embedding included.
    """

    embedding_dim: int = 384
    context_window: int = 256
    vocab_size: int = 65
    n_heads: int = 6
    n_layers: int = 6
    dropout: float = 0.2
    bias: bool = False
    decay_embeddings: bool = True
    eval_protocol: str = "random"  # nanoGPT's estimate_loss: 200 fresh random batches
    batch_size: int = 64
    max_learning_rate: float = 1e-3
    min_learning_rate: float = 1e-4
    warmup_steps: int = 100
    steps: int = 5000
    weight_decay: float = 0.1
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_steps: int = 200
    device: str = "gpu"


@dataclass
class SmolGPTConfig(GPTConfig):
    """GPT-2 style: the README's 49M parameter model, 0.5M-token steps by accumulation.

    lr 6e-4 with warm-up and cosine decay, betas (0.9, 0.95), weight decay 0.1, clip 1.0.
    """

    embedding_dim: int = 384
    context_window: int = 1024
    vocab_size: int = 50304  # 50257 rounded up to a multiple of 128: faster matmuls
    n_heads: int = 6
    n_layers: int = 6
    dropout: float = 0.0
    tie_weights: bool = False
    batch_size: int = 16
    gradient_accumulation_steps: int = 32
    max_learning_rate: float = 6e-4
    min_learning_rate: float = 6e-5
    warmup_steps: int = 700
    steps: int = 19_000
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    eval_interval: int = 500
    eval_steps: int = 20
    device: str = "gpu"


@dataclass
class GPT2Config(GPTConfig):
    """GPT-2 124M as in Karpathy's reproduction: 12 layers x 12 heads x 768, T = 1024,
    vocabulary 50,304 (50,257 padded to a multiple of 128), biases and a tied head as
    GPT-2, no dropout. About 0.5M tokens per step (16 x 1024 x 32 micro-batches at world size
    1), lr 6e-4 -> 6e-5 over 19,073 steps after 715 of warm-up (375M tokens, GPT-3's),
    AdamW (0.9, 0.95) with weight decay 0.1 on every matrix and embedding, clip 1.0. Run it
    with --precision bf16 on a GPU, from token shards (tricycle_datasets.prepare).
    """

    embedding_dim: int = 768
    context_window: int = 1024
    vocab_size: int = 50304
    n_heads: int = 12
    n_layers: int = 12
    activation_fn: str = "gelu_tanh"  # GPT-2's tanh approximation
    dropout: float = 0.0
    tie_weights: bool = True
    bias: bool = True
    batch_size: int = 16
    gradient_accumulation_steps: int = 32  # 16 * 1024 * 32 = 524,288 tokens per step
    max_learning_rate: float = 6e-4
    min_learning_rate: float = 6e-5
    warmup_steps: int = 715
    steps: int = 19_073
    weight_decay: float = 0.1
    decay_embeddings: bool = True
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_steps: int = 20
    device: str = "gpu"


CONFIGS: dict[str, type[GPTConfig]] = {
    "debug": DebugConfig,
    "cpu": CPUConfig,
    "shakespeare": ShakespeareConfig,
    "shakespeare-char": ShakespeareCharConfig,
    "smol-gpt": SmolGPTConfig,
    "gpt2": GPT2Config,
}


def get_config(name: str, **overrides) -> GPTConfig:
    """The config called ``name`` (see ``CONFIGS``), with some fields overridden."""
    try:
        config_class = CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown config {name!r}; choose from {sorted(CONFIGS)}") from None
    return config_class(**overrides)

"""GPT: a GPT-2 style decoder-only transformer, and Llama, its Llama-style variant.

    GPT    tokens (B, T) -> token_embedding + position_embedding -> dropout    # (B, T, E)
                         -> n_layers x GPT2TransformerBlock                    # (B, T, E)
                         -> layer_norm -> head                                 # (B, T, V)

    Llama  tokens (B, T) -> token_embedding -> dropout                         # (B, T, E)
                         -> n_layers x LlamaTransformerBlock (RoPE, GQA)       # (B, T, E)
                         -> RMSNorm -> head                                    # (B, T, V)

``build_model(config)`` makes the one that ``config.arch`` names. Both share the forward
pass's frame, precision handling, generation with a KV cache (``generate``, ``stream``: the
``GenerationMixin`` of ``tricycle.generation``), checkpoints and pickling; Llama overrides
only how it is built and how tokens are embedded.

With ``config.tie_weights`` the head is an Einsum against the token embedding's weights, so
that one Tensor receives gradients from both of its uses. Weights start as in GPT-2: N(0, 0.02)
everywhere, N(0, 0.02 / sqrt(2 * n_layers)) for the projections into the residual stream,
zero biases, unit LayerNorm gains.

A GPT pickles to host arrays (``pickle.dump(model, f)``), so a model trained on a GPU loads
and samples on a CPU-only machine.
"""

from functools import partial

import numpy as np

from tricycle import backend, checks, pretrained
from tricycle.attention import KVCache
from tricycle.blocks import GPT2TransformerBlock, LlamaTransformerBlock
from tricycle.configs import GPTConfig
from tricycle.decode import sample_next  # noqa: F401 - its home before tricycle.decode
from tricycle.einsum import Einsum
from tricycle.generation import GenerationMixin
from tricycle.initialisers import gpt2_residual_std, init_normal
from tricycle.layers import Dense, Dropout, Embedding, Layer, LayerNorm, RMSNorm, embedding
from tricycle.tensor import Tensor

_TIED_HEAD = Einsum("...e,ve->...v")  # (B, T, E) x (V, E) -> (B, T, V)
_LAST_HEAD = Einsum("be,ev->bv")  # generation: the last position (B, E) x (E, V) -> (B, V)
_uninitialised = partial(np.empty, dtype=np.float32)  # an initialiser for weights to be loaded


class GPT(Layer, GenerationMixin):
    """A GPT built from a ``GPTConfig`` (see ``tricycle.configs``).

    ``model(tokens)`` maps integer ids (B, T) (or (T,)), T <= context_window, to logits
    (B, T, vocab_size). ``generate`` continues prompts with a KV cache, greedily, sampled or by
    beam search, with the options of transformers' ``generate``.
    """

    arch = "gpt2"  # the config.arch this class builds
    learnt_positions = True  # a position embedding (Llama rotates q and k instead)

    @checks.arguments(config=checks.instance(GPTConfig), initialise=checks.boolean)
    def __init__(self, config: GPTConfig, initialise: bool = True):
        """``initialise=False`` leaves the weights' values undefined (``np.empty``): for a
        model whose weights are loaded next, which then costs no random draws."""
        _check_arch(type(self), config)
        self.config = config
        E = config.embedding_dim
        weights_init, residual_init = (
            partial(init_normal, std=std) if initialise else _uninitialised
            for std in (0.02, gpt2_residual_std(config.n_layers))
        )

        self.token_embedding = Embedding(config.vocab_size, E, initialiser=weights_init)
        if self.learnt_positions:
            self.position_embedding = Embedding(config.context_window, E, initialiser=weights_init)
        self.embedding_dropout = Dropout(config.dropout)
        self.blocks = [self._block(weights_init, residual_init) for _ in range(config.n_layers)]
        self.layer_norm = self._final_norm()
        if not config.tie_weights:
            self.head = Dense(E, config.vocab_size, bias=False, initialiser=weights_init)

    def _block(self, weights_init, residual_init) -> Layer:
        """One transformer block, its weights drawn by the two initialisers."""
        config = self.config
        return GPT2TransformerBlock(
            config.embedding_dim,
            config.n_heads,
            config.context_window,
            expansion_ratio=config.expansion_ratio,
            dropout_prob=config.dropout,
            activation=config.activation_fn,
            initialiser=weights_init,
            projection_initialiser=residual_init,
            bias=config.bias,
            norm_eps=config.norm_epsilon,
        )

    def _final_norm(self) -> Layer:
        """The norm before the head."""
        config = self.config
        return LayerNorm(config.embedding_dim, config.norm_epsilon, bias=config.bias)

    # ------------------------------------------------------------------ forward
    def forward(self, tokens, caches: list[KVCache] | None = None, precision=None) -> Tensor:
        """Logits (B, T, V) for integer ids (B, T); a 1-D (T,) input gives (T, V).

        With ``caches`` (one per block, from ``new_caches``) the tokens continue the cached
        positions: generation feeds one new token at a time.

        ``precision``: a policy to run under, as ``precision.forward(model, tokens)`` runs it
        (a mixed one computes in its 16-bit dtype: ``tricycle.precision.Precision.forward``).
        """
        if precision is not None:
            return precision.run(self, self._forward, tokens, caches)
        return self._forward(tokens, caches)

    def _forward(self, tokens, caches: list[KVCache] | None) -> Tensor:
        x, single = self._features(tokens, caches)  # (B, T, E)
        if self.config.tie_weights:
            logits = _TIED_HEAD(x, self.token_embedding.weights)  # (B, T, V)
        else:
            logits = self.head(x)  # (B, T, V)
        logits.is_batched = not single
        return logits[0] if single else logits

    def _features(self, tokens, caches: list[KVCache] | None) -> tuple[Tensor, bool]:
        """The final norm's output (B, T, E) for ids (B, T) or (T,) (then ``single``)."""
        ids = tokens.array if isinstance(tokens, Tensor) else tokens
        xp = self.token_embedding.weights.xp
        try:
            ids = xp.asarray(ids)
        except ValueError:  # rows of different lengths
            raise ValueError(
                "GPT: token ids must be a (batch, tokens) array; the rows given differ in "
                "length (pad them, or run them one at a time)"
            ) from None
        single = ids.ndim == 1
        if single:
            ids = ids[None]
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ValueError(f"GPT: expected token ids of shape (batch, tokens), got {ids.shape}")
        if caches is not None:
            self._check_caches(caches, ids.shape[0])
        cache = None if caches is None else caches[0]
        start = 0 if cache is None else cache.host_length  # None: counted on the device
        T, window = ids.shape[1], self.config.context_window
        if start is not None and start + T > window:
            raise ValueError(
                f"GPT: a sequence of T={start + T} tokens is longer than the context window "
                f"of {window}; crop the input to its last {window} tokens"
            )

        x = self.embedding_dropout(self._embed(ids, cache))  # (B, T, E)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])  # (B, T, E)
        return self.layer_norm(x), single

    def _check_caches(self, caches, batch_size: int) -> None:
        """One KV cache per block, holding ``batch_size`` rows of this model's heads
        (``new_caches(batch_size)``), or a ValueError saying what is off."""
        n = len(self.blocks)
        if not isinstance(caches, (list, tuple)) or len(caches) != n:
            got = len(caches) if isinstance(caches, (list, tuple)) else type(caches).__name__
            raise ValueError(f"GPT: expected {n} KV caches (one per block: new_caches), got {got}")
        attention, (B, H, _, D) = self.blocks[0].attention, caches[0].keys.shape
        if (B, H, D) != (batch_size, attention.n_heads, attention.head_dim):
            raise ValueError(
                f"GPT: the KV caches hold batch {B}, {H} heads of size {D}; the tokens and the "
                f"model need batch {batch_size}, {attention.n_heads} heads of size "
                f"{attention.head_dim}: make them with new_caches({batch_size})"
            )

    def _embed(self, ids, cache: KVCache | None) -> Tensor:
        """Token plus position embeddings (B, T, E) of ids (B, T) at the positions after those
        in ``cache`` (within the window: ``_features`` checked)."""
        xp, T = self.token_embedding.weights.xp, ids.shape[1]
        positions = xp.arange(T) if cache is None else cache.positions(xp, T)  # (T,)
        return self.token_embedding(ids) + embedding(
            positions, self.position_embedding.weights, check_range=False
        )

    # ------------------------------------------------------------------ other people's weights
    @classmethod
    def from_pretrained(cls, name_or_dir) -> "GPT":
        """A model from a Hugging Face directory (``config.json`` + ``model.safetensors`` or
        its shards), or a hub name such as "gpt2" (fetched with ``huggingface_hub`` when
        online); ``config.json``'s ``model_type`` picks the class (GPT: "gpt2"; Llama: "llama",
        "qwen2", "qwen3", "mistral"). The name maps and the checks are ``tricycle.pretrained``'s."""
        directory = pretrained.resolve(name_or_dir)
        config = pretrained.read_config(directory)
        model_class = MODELS[config.arch]
        if not issubclass(model_class, cls):
            raise ValueError(
                f"{cls.__name__}.from_pretrained: {directory / 'config.json'} describes a "
                f"{config.arch!r} model; use {model_class.__name__}.from_pretrained"
            )
        model = pretrained.load_weights(model_class(config, initialise=False), directory)
        model.token_ids = pretrained.token_ids(directory)  # bos/eos/pad: exported back
        model.hf_model_type = pretrained.model_type(directory)  # "mistral" goes out as read
        return model

    def save_pretrained(self, directory) -> None:
        """Write the model in the Hugging Face layout (``config.json`` + ``model.safetensors``)
        that ``transformers``' ``AutoModelForCausalLM.from_pretrained`` reads; the directory
        is replaced as a whole, so a failed export leaves a previous one intact."""
        ids, kind = getattr(self, "token_ids", None), getattr(self, "hf_model_type", None)
        pretrained.write(directory, self.config, self.state_dict(), ids, kind)

    def new_caches(self, batch_size: int, capacity: int | None = None) -> list[KVCache]:
        """Empty KV caches, one per block, each holding up to ``capacity`` positions (default
        and at most: context_window; a long-context Llama needs far fewer to sample)."""
        return [block.attention.new_cache(batch_size, capacity) for block in self.blocks]

    # ------------------------------------------------------------------ generation's steps
    def _head_matrix(self, batch_size: int) -> Tensor:
        """The head as (E, V). A tied head is the embedding (V, E) read transposed, or, for a
        CPU product of several rows, which BLAS runs faster from it, an (E, V) copy."""
        if not self.config.tie_weights:
            return self.head.weights
        rows, xp = self.token_embedding.weights.array, self.token_embedding.weights.xp  # (V, E)
        if xp is not np or batch_size == 1:
            return Tensor(rows.T, requires_grad=False)
        head = xp.empty(rows.shape[::-1], rows.dtype)  # (E, V)
        for start in range(0, len(rows), 4096):  # by blocks: one strided copy thrashes caches
            head[:, start : start + 4096] = rows[start : start + 4096].T
        return Tensor(head, requires_grad=False)

    def _last_logits(self, ids, caches, head: Tensor) -> np.ndarray:
        """Host float64 logits (B, V) of the last position of ids (B, T)."""
        return backend.to_host_array(self._device_logits(ids, caches, head)).astype(np.float64)

    def _device_logits(self, ids, caches, head: Tensor):
        """Logits (B, V) of the last position of ids (B, T), on the model's device: only that
        position goes through the head (E, V) (``_head_matrix``)."""
        x, _ = self._features(ids, caches)  # (B, T, E)
        last = Tensor(x.array[:, -1], requires_grad=False)  # (B, E)
        return _LAST_HEAD(last, head).array  # (B, V)

    def extra_repr(self) -> str:
        c = self.config
        return (
            f"vocab_size={c.vocab_size}, context_window={c.context_window}, "
            f"embedding_dim={c.embedding_dim}, n_heads={c.n_heads}, n_layers={c.n_layers}"
        )


class Llama(GPT):
    """A Llama-style GPT from a ``GPTConfig`` with ``arch="llama"``: no position embedding
    (RoPE, scaled as ``config.rope_scaling`` says, rotates queries and keys in each block),
    grouped-query attention with ``config.kv_heads`` key/value heads, SwiGLU MLPs of width
    ``config.hidden_size``, RMSNorm, biases where ``config.attention_bias`` puts them; the head
    is tied to the token embedding if ``config.tie_weights``.

    Built and initialised by the GPT's constructor (N(0, 0.02), residual projections scaled
    by 1 / sqrt(2 n_layers)) with its own blocks and final norm; everything else (forward,
    ``generate``, ``stream`` with a KV cache, ``state_dict``, pickling, precision) is GPT's.
    """

    arch = "llama"
    learnt_positions = False

    def _block(self, weights_init, residual_init) -> Layer:
        config = self.config
        return LlamaTransformerBlock(
            config.embedding_dim,
            config.n_heads,
            config.kv_heads,
            config.context_window,
            config.hidden_size,
            rope_theta=config.rope_theta,
            dropout_prob=config.dropout,
            initialiser=weights_init,
            projection_initialiser=residual_init,
            norm_eps=config.norm_epsilon,
            rope_scaling=config.rope_scaling,
            attention_bias=config.attention_bias, head_dim=config.head_dim, qk_norm=config.qk_norm,
        )

    def _final_norm(self) -> Layer:
        return RMSNorm(self.config.embedding_dim, self.config.norm_epsilon)

    def _embed(self, ids, cache: KVCache | None) -> Tensor:
        """Token embeddings (B, T, E): positions enter through RoPE in the attention."""
        return self.token_embedding(ids)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, n_kv_heads={self.config.kv_heads}"


MODELS: dict[str, type[GPT]] = {"gpt2": GPT, "llama": Llama}


@checks.arguments(config=checks.instance(GPTConfig))
def build_model(config: GPTConfig) -> GPT:
    """The model ``config.arch`` names: a ``GPT`` ("gpt2") or a ``Llama`` ("llama")."""
    if config.arch not in MODELS:
        raise ValueError(f"build_model: arch must be one of {sorted(MODELS)}, got {config.arch!r}")
    return MODELS[config.arch](config)


def _check_arch(model_class: type, config: GPTConfig) -> None:
    if config.arch != model_class.arch:
        raise ValueError(
            f"{model_class.__name__}: the config has arch={config.arch!r}, but this class builds "
            f"{model_class.arch!r} models; use build_model(config)"
        )

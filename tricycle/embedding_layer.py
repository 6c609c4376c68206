"""The embedding lookup: ``embedding`` (rows of a table picked by integer ids, the
reference pair ``embedding_forward``/``_backward`` that a backend may replace) and the
``Embedding`` layer with torch's arguments (``max_norm``, ``norm_type``,
``scale_grad_by_freq``, ``_weight``, ``_freeze``; ``sparse`` refused: tricycle's gradients are
dense), which reaches them through ``F.embedding``. ``tricycle.layers`` re-exports every name
here, where they were first defined; pickles name the layer there.
"""

import importlib
from collections.abc import Callable

import numpy as np

from tricycle import backend, checks, dispatch, ranges
from tricycle.backend import check_same_device
from tricycle.initialisers import init_normal
from tricycle.module import Layer, parameter
from tricycle.tensor import Tensor


def embedding_forward(xp, weights, ids):
    """Rows of ``weights`` (V, E) picked by integer ``ids`` (...): (..., E)."""
    return xp.take(weights, ids, axis=0)


def embedding_backward(xp, dout, ids, vocab_size: int, dtype):
    """dW (V, E) of ``embedding_forward``: each row of dout (..., E) added to its id's row."""
    dweights = xp.zeros((vocab_size, dout.shape[-1]), dtype=dtype)
    xp.add.at(dweights, ids.reshape(-1), dout.reshape(-1, dout.shape[-1]))
    return dweights


def padding_row(padding_idx, vocab_size: int, owner: str = "Embedding") -> int | None:
    """PyTorch's ``padding_idx`` (negative counts from the end) as a row of a table of
    ``vocab_size`` rows, in [0, V), or None for None; ``owner`` names the op in errors."""
    if padding_idx is None:
        return None
    integer = checks.is_integer(padding_idx)
    if not integer or not -vocab_size <= padding_idx < vocab_size:
        expected = f"an integer in [-{vocab_size}, {vocab_size}) (a row of the table)"
        error = ValueError if integer else TypeError
        checks.fail(owner, "padding_idx", expected, padding_idx, error)
    return int(padding_idx) % vocab_size


def embedding(
    ids, weights: Tensor, *, check_range: bool = True, padding_idx: int | None = None
) -> Tensor:
    """Rows of ``weights`` (V, E) picked by integer ``ids`` of any shape: (...) -> (..., E).

    Ids outside [0, V) raise IndexError (never wrap): at once on the CPU; on a GPU at the
    next read-back, without stopping the host here (``tricycle.ranges``).
    ``check_range=False`` skips the check for ids valid by construction (positions from
    arange). The gradient scatters-adds into the used rows, except row ``padding_idx`` (when
    given; negative counts from the end), which gets none: PyTorch's padding row.
    """
    xp = weights.xp
    ids = ids.array if isinstance(ids, Tensor) else ids
    if not (isinstance(ids, np.ndarray) or backend.is_cupy_array(ids)):
        ids = xp.asarray(ids)
    check_same_device("Embedding", ids, weights.array)
    if ids.dtype.kind not in "iu":  # integer dtypes (cheaper than np.issubdtype)
        raise TypeError(
            f"Embedding: ids must be integers, got dtype {ids.dtype} with shape {ids.shape}"
        )
    vocab_size = weights.shape[0]
    if padding_idx is not None:
        padding_idx = padding_row(padding_idx, vocab_size)
    if check_range:  # the device's check: on a GPU it defers to the next read-back
        check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
        check(ids, vocab_size, op="Embedding", context=f"for a vocabulary of size {vocab_size}")
    forward, backward = dispatch.choose(
        "embedding", (embedding_forward, embedding_backward), weights.array
    )
    out = forward(xp, weights.array, ids)  # (..., E)
    dtype = weights.dtype

    def back_fn(dout):
        dweights = backward(xp, dout, ids, vocab_size, dtype)  # (V, E)
        if padding_idx is not None:
            dweights[padding_idx] = 0  # the padding row learns nothing
        return dweights

    return Tensor(out, args=(weights,), back_fns=(back_fn,), name="embedding")


class Embedding(Layer):
    """A lookup table of ``from_size`` vectors of size ``to_size``: ids (...) -> (..., to_size).

    ``weights`` (from_size, to_size) starts as N(0, 0.02^2) unless ``initialiser`` is given,
    or is torch's ``_weight`` (a tensor of that shape, used as it is); ``_freeze`` makes it
    need no gradient. By keyword, as torch's ``nn.Embedding``:

    - ``padding_idx`` (negative counts from the end): that row starts as zeros (unless
      ``_weight`` is given) and gets no gradient, so a padding id embeds to a constant;
    - ``max_norm``, ``norm_type``: each looked-up row whose ``norm_type``-norm is above
      ``max_norm`` is scaled down to it in place before the lookup;
    - ``scale_grad_by_freq``: each row's gradient divided by its id's count in the batch;
    - ``sparse``: only False (tricycle's gradients are dense).

    ``from_pretrained(embeddings, freeze=True, ...)`` builds one around a given table.
    """

    # class defaults: layers pickled before these arguments still load
    padding_idx = max_norm = None
    norm_type, scale_grad_by_freq, sparse = 2.0, False, False
    torch_names = {"num_embeddings": "from_size", "embedding_dim": "to_size"}  # torch's keywords

    @checks.arguments(
        from_size=checks.positive_int,
        to_size=checks.positive_int,
        initialiser=checks.optional(checks.function),
        max_norm=checks.optional(checks.positive),
        norm_type=checks.real,
        scale_grad_by_freq=checks.boolean,
        sparse=checks.boolean,
        _freeze=checks.boolean,
    )
    def __init__(
        self,
        from_size: int,
        to_size: int,
        initialiser: Callable | None = None,
        *,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
    ):
        if sparse:
            raise ValueError(
                "Embedding: sparse=True is not supported: tricycle's gradients are dense "
                "(leave sparse=False; use Adam rather than SparseAdam)"
            )
        self.from_size, self.to_size = from_size, to_size
        if _weight is None:
            table = (initialiser or init_normal)((from_size, to_size))
        elif initialiser is not None:
            raise TypeError("Embedding: give initialiser or _weight, not both")
        elif not hasattr(_weight, "shape"):
            raise TypeError(f"Embedding: _weight must be a tensor of shape ({from_size}, "
                            f"{to_size}), got {_weight!r}")  # fmt: skip
        elif tuple(_weight.shape) != (from_size, to_size):
            raise AssertionError(  # torch's kind of error
                f"Embedding: shape of weight does not match num_embeddings and embedding_dim: "
                f"expected ({from_size}, {to_size}), got {tuple(_weight.shape)}"
            )
        else:
            table = _weight
        self.weights = parameter(table, "weights")
        if padding_idx is not None:
            self.padding_idx = padding_row(padding_idx, from_size)
            if _weight is None:  # torch's: a given table is used as it is
                self.weights.array[self.padding_idx] = 0
        if max_norm is not None:
            self.max_norm, self.norm_type = float(max_norm), float(norm_type)
        self.scale_grad_by_freq = scale_grad_by_freq
        if _freeze:
            self.weights.requires_grad = False

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> "Embedding":
        """torch's ``nn.Embedding.from_pretrained``: a layer around the 2-D table
        ``embeddings`` (used as it is), frozen unless ``freeze=False``."""
        if getattr(embeddings, "ndim", None) != 2:
            raise AssertionError(  # torch's kind of error
                f"Embedding.from_pretrained: embeddings must be 2-dimensional, got shape "
                f"{tuple(getattr(embeddings, 'shape', ()))}"
            )
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings,
                   _freeze=freeze)  # fmt: skip

    @property
    def num_embeddings(self) -> int:
        """torch's name for the table's rows (``from_size``, read from the table itself)."""
        return self.weights.shape[0]

    @property
    def embedding_dim(self) -> int:
        """torch's name for the vectors' size (``to_size``, read from the table itself)."""
        return self.weights.shape[1]

    def forward(self, ids) -> Tensor:
        if self.max_norm is None and not self.scale_grad_by_freq:  # the plain lookup
            return embedding(ids, self.weights, padding_idx=self.padding_idx)
        # F.embedding's own arguments; tricycle.nn imports this module: reached by name
        functional = importlib.import_module("tricycle.nn.functional_rest")
        return functional.embedding(ids, self.weights, self.padding_idx, self.max_norm,
                                    self.norm_type, self.scale_grad_by_freq)  # fmt: skip

    def extra_repr(self) -> str:
        # the table's own shape: model surgery may replace it (nanoGPT's crop_block_size)
        from_size, to_size = self.weights.shape
        extra = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            extra += f", max_norm={self.max_norm}"
            extra += "" if self.norm_type == 2 else f", norm_type={self.norm_type}"
        extra += ", scale_grad_by_freq=True" if self.scale_grad_by_freq else ""
        return f"from_size={from_size}, to_size={to_size}" + extra


# pickles (and safe_globals lists) name Embedding where it was first defined, which re-exports it
Embedding.__module__ = "tricycle.layers"

"""``torch.nn.modules.sparse``'s names: ``Embedding`` and ``EmbeddingBag``, which are
``tricycle.nn``'s."""

from tricycle.layers import Embedding
from tricycle.nn.embedding_bag import EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]

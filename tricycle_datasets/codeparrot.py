"""CodeParrot: Python files from GitHub, streamed from the Hugging Face hub.

Optional: needs `pip install datasets` and network access. Documents are streamed until
`max_bytes` is reached (nothing else is downloaded); every 10th is the validation set.
"""

from tricycle import checks
from tricycle_datasets import Corpus, check_vocab_size, split_documents

DATASET = "codeparrot/codeparrot-clean-valid"


class CodeParrot(Corpus):
    """The first `max_bytes` of a CodeParrot dataset, BPE-tokenised (tokens are cached, but
    the documents are streamed again on every load)."""

    @checks.arguments(max_bytes=checks.positive_int, dataset=checks.text)
    def __init__(self, vocab_size: int, max_bytes: int = 4_000_000, dataset: str = DATASET):
        check_vocab_size("CodeParrot", vocab_size)
        documents = stream_documents(dataset, max_bytes)
        super().__init__("codeparrot", *split_documents(documents), vocab_size=vocab_size)


def stream_documents(dataset: str, max_bytes: int) -> list[str]:
    """The `content` of the dataset's first documents, up to `max_bytes` UTF-8 bytes."""
    # An optional third-party dependency, imported only by the one loader that needs it.
    try:
        import datasets
    except ImportError:
        raise ImportError(
            "CodeParrot needs the Hugging Face `datasets` package: pip install datasets"
        ) from None

    documents, total = [], 0
    for row in datasets.load_dataset(dataset, split="train", streaming=True):
        size = len(row["content"].encode("utf-8"))
        if total + size > max_bytes:
            break
        documents.append(row["content"])
        total += size
    return documents

"""Learning byte-pair merges: repeatedly merge the most frequent adjacent pair of ids.

``BPETokeniser.train`` (``tricycle.tokeniser``) splits its text into chunks ("words"), counts
them, and hands their bytes here; the merges come back in the order learnt, which is their
rank. Applying them to text is ``tricycle.bpe``'s.
"""

import heapq
from collections import defaultdict

from tricycle.bpe import N_BYTES


def learn_merges(words: list[list[int]], freqs: list[int], n_merges: int) -> list[tuple[int, int]]:
    """Up to ``n_merges`` merges learnt from distinct ``words`` (lists of ids, changed in
    place) occurring ``freqs`` times each; merge k makes the id 256 + k (``N_BYTES`` + k).

    Ties between equally frequent pairs go to the smallest pair ``(a, b)``, so training is
    deterministic. Fewer merges come back when the words run out of pairs.
    """
    # pair -> total count over the corpus, and pair -> indices of words that contain it.
    # `where` may keep words that no longer contain the pair; merging them is a no-op.
    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, (word, freq) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += freq
            where[pair].add(i)

    # A max-heap (by count, then smallest pair) with lazy deletion: an entry is live only
    # if its count still equals the pair's current count.
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    merges: list[tuple[int, int]] = []
    while len(merges) < n_merges and heap:
        neg_count, pair = heapq.heappop(heap)
        if pair_counts.get(pair) != -neg_count:
            continue  # stale entry
        new_id = N_BYTES + len(merges)
        merges.append(pair)

        # Re-count only the words that contained the pair. The count changes are summed
        # over all those words first so each changed pair is pushed on the heap once.
        delta: dict[tuple[int, int], int] = defaultdict(int)
        for i in where.pop(pair):
            word = words[i]
            new_word = _merge(word, pair, new_id)
            if len(new_word) == len(word):
                continue  # stale index entry: this word no longer has the pair
            freq = freqs[i]
            for p in zip(word, word[1:]):
                delta[p] -= freq
            for p in zip(new_word, new_word[1:]):
                delta[p] += freq
                if new_id in p:  # only pairs with the new id are new to this word
                    where[p].add(i)
            words[i] = new_word

        for p, d in delta.items():
            if d == 0:
                continue
            count = pair_counts[p] + d
            if count > 0:
                pair_counts[p] = count
                heapq.heappush(heap, (-count, p))
            else:
                del pair_counts[p]
    return merges


def _merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping occurrence of `pair` in `ids`, left to right."""
    a, b = pair
    out = []
    i, n = 0, len(ids)
    while i < n:
        if ids[i] == a and i + 1 < n and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out

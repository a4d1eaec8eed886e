"""Refining decoded sentences by search: the encoder checks what the decoder proposes.

A Vec2Sent decoder often gets a sentence almost right ("shall we walk, seek?" for "shall we walk,
augusta?"): the word it misses is rare, so no beam reaches it, yet the encoder would recognise the
right sentence at once (its cosine to the vector is 1). `refine` climbs that cosine with one-word
edits of the best hypothesis:

    delete a word, swap two neighbours, replace a word with a pool word, insert a pool word

where the pool holds the words that the vector itself points to (the word head's top words, passed
in as `vector_words`) and the words of the decoder's other hypotheses. Each round embeds every edit
of every sentence in one batch and keeps the best edit if it raises the cosine; a sentence stops when
no edit helps or when it already matches the vector (cosine >= `done_at`).

`correct` works in the embedding space instead, before any edit: it decodes the vector v, embeds
the closest output (u), and decodes again from v moved further along what the output missed,
t_k+1 = normalise(t_k + step (v - u_k)), for a few rounds; every round's hypotheses then compete on
cosine to v (vec2text's correction, without its trained corrector).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from core.encoder import l2_normalize
from core.text import canonical_tokens
from core.vec2sent.fit import Encode, best_by_cosine
from core.vec2sent.vocab import words_to_text

Search = Callable[[np.ndarray], list[list[str]]]  # target vectors (n, d) -> each one's hypotheses


@dataclass(frozen=True)
class RefineSettings:
    """rounds: edit rounds at most; pool: how many vector words and how many hypothesis words each
    round may insert or substitute; done_at: the cosine at which a sentence counts as found."""
    rounds: int = 2
    pool: int = 5
    done_at: float = 0.999


@dataclass(frozen=True)
class CorrectSettings:
    """rounds: decodings of a corrected target after the first; step: how far each round moves the
    target along what the last output missed. The defaults are `engine.decode`'s: one round of 0.25
    lifts BLEU on held-out sentences from 27.3 to 30.2 for about twice the time (docs/vec2sent.md); the app's
    most exact setting: core/vec2sent/reading.py, EXACT_CORRECTION."""
    rounds: int = 1
    step: float = 0.25

    def __post_init__(self) -> None:
        if not 0 <= self.rounds <= 8 or not 0 < self.step <= 4:
            raise ValueError(f"correction rounds must be 0-8 and its step in (0, 4], not {self.rounds} and {self.step}")


def correct(search: Search, vectors: np.ndarray, encode: Encode,
            settings: CorrectSettings = CorrectSettings()) -> list[list[str]]:
    """Per row i, every round's hypotheses (the first round's first): those that `search` gives for vectors[i],
    then those of each corrected target t_k+1 = normalise(t_k + step (v - u_k)), where v = vectors[i] normalised
    and u_k the normalised embedding of the hypothesis of round k closest to v. Each text is embedded once, every
    round's as that round ends (which one is shown is `core.vec2sent.reading.choose`'s to say)."""
    encode = embedding_once(encode)
    v = l2_normalize(np.atleast_2d(np.asarray(vectors, dtype=np.float32)))  # (n, d)
    target, found = v, [[] for _ in v]
    for round_ in range(settings.rounds + 1):
        hypotheses = search(target)
        chosen = [(texts[i], score) for texts, (i, score) in zip(hypotheses, best_by_cosine(hypotheses, v, encode))]
        for row, texts in zip(found, hypotheses, strict=True):
            row.extend(texts)
        if round_ < settings.rounds:
            target = _corrected_target(target, v, chosen, encode, settings.step)
    return found


def _corrected_target(target: np.ndarray, v: np.ndarray, chosen: list[tuple[str, float]], encode: Encode,
                      step: float) -> np.ndarray:
    """normalise(target + step (v - u)) (n, d), u the embedding of each row's chosen text; a row
    whose choice has no cosine (no non-blank hypothesis) keeps its target."""
    filled = [i for i, (_, score) in enumerate(chosen) if np.isfinite(score)]
    if not filled:
        return target
    u = l2_normalize(np.asarray(encode([chosen[i][0] for i in filled]), dtype=np.float32))  # (m, d)
    moved = target.copy()
    moved[filled] = l2_normalize(target[filled] + step * (v[filled] - u))
    return moved


def embedding_once(encode: Encode) -> Encode:
    """`encode` that embeds each distinct text once, however often it is asked for again."""
    return once_per_text(encode, np.float32)


def once_per_text(compute: Callable[[list[str]], np.ndarray], dtype: type = np.float32
                  ) -> Callable[[Sequence[str]], np.ndarray]:
    """`compute` (texts -> one row per text: an embedding (n, d), a log-probability (n,)) that computes each
    distinct text once, however often it is asked for again: res[i] = compute([texts[i]])'s row as first computed."""
    seen: dict[str, np.ndarray] = {}

    def computed(texts: Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in seen]
        if new:
            seen.update(zip(new, np.asarray(compute(new), dtype=dtype)))
        return np.stack([seen[t] for t in texts]) if texts else np.asarray(compute([]), dtype=dtype)

    return computed


def one_word_edits(words: Sequence[str], pool: Sequence[str]) -> list[tuple[str, ...]]:
    """Every distinct non-empty sentence one edit away from `words`: a deletion, a swap of
    neighbours, a substitution or an insertion of a `pool` word (the input itself excluded)."""
    words, edits = list(words), set()
    for i, word in enumerate(words):
        edits.add(tuple(words[:i] + words[i + 1:]))
        if i + 1 < len(words):
            edits.add(tuple(words[:i] + [words[i + 1], word] + words[i + 2:]))
        edits.update(tuple(words[:i] + [new] + words[i + 1:]) for new in pool)
    for i in range(len(words) + 1):
        edits.update(tuple(words[:i] + [new] + words[i:]) for new in pool)
    edits.discard(())
    edits.discard(tuple(words))
    return sorted(edits)


def edit_pool(words: Sequence[str], vector_words: Sequence[str], hypotheses: Sequence[Sequence[str]],
              size: int) -> list[str]:
    """The first `size` vector words and the `size` words most frequent across the hypotheses that
    `words` lacks (a hypothesis counts once per word)."""
    have = set(words)
    counts = Counter(w for h in hypotheses for w in set(h) if w not in have)
    frequent = [w for w, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))][:size]
    return list(dict.fromkeys([*vector_words[:size], *frequent]))


def refine(hypotheses: Sequence[Sequence[str]], vectors: np.ndarray, encode: Encode,
           vector_words: Sequence[Sequence[str]], settings: RefineSettings = RefineSettings()) -> list[str]:
    """Per row i: the text closest (cosine) to vectors[i] among hypotheses[i] (the decoder's n-best,
    likeliest first) and the sentences that rounds of one-word edits reach from it. An unedited
    hypothesis is returned as the decoder wrote it."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))  # (n, d)
    if len(hypotheses) != len(vectors) or len(vector_words) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors need as many hypothesis lists and word lists, got "
                         f"{len(hypotheses)} and {len(vector_words)}")
    tokenised = [[canonical_tokens(h) for h in hs] for hs in hypotheses]
    start = best_by_cosine([[" ".join(words) for words in ts] for ts in tokenised], vectors, encode)
    texts = [hs[i] if hs else "" for hs, (i, _) in zip(hypotheses, start)]
    best = [(ts[i] if ts else [], score) for ts, (i, score) in zip(tokenised, start)]  # (words, cosine)
    active = [i for i, (words, score) in enumerate(best) if words and score < settings.done_at]
    for _ in range(settings.rounds):
        candidates = [one_word_edits(best[i][0], edit_pool(best[i][0], vector_words[i], tokenised[i], settings.pool))
                      for i in active]
        improved = best_by_cosine([[" ".join(c) for c in row] for row in candidates], vectors[active], encode)
        still = []
        for i, row, (j, score) in zip(active, candidates, improved):
            if row and score > best[i][1]:
                best[i], texts[i] = (list(row[j]), score), words_to_text(list(row[j]))
                if score < settings.done_at:
                    still.append(i)
        active = still
        if not active:
            break
    return texts

"""Candidate sentences made from the sentences a path is built of, and the choice along a path.

The decoder alone reads a point between two sentences as one end or the other, and an analogy's
vector b - a + c as a sentence that slips on grammar. Both paths come with sentences that lie near
their points: word edits of the ends they were built from.

- `transfer_edit(a, b, c)`: c with the word edits that turn a into b ("The man is walking." ->
  "The woman is walking." applied to "The man is running." gives "The woman is running."), or None
  when an edit does not apply to c. It is only a candidate: it is shown when it fits b - a + c at
  least as well as what the decoder wrote, by the encoder's cosine.
- `transfer_edits(a, b, c)`: the same and c with the change of structure that turns a into b (core/vec2sent/
  structure.py: "He took the bus." -> "He did not take the bus." makes "He ate the soup." -> "He did not eat the
  soup."), each only a candidate.
- `edit_path(x, y)`: sentences made by applying some of the word edits that turn x into y;
  `path_candidates(x, y, decoded)` an interpolation's candidates (the ends, the decodings, the edit path's sentences
  without an agreement slip).
- `walk(fits, to_start, own, bonus)`: one candidate per point of an interpolation, best fitting
  overall, such that the chosen sentences' cosine to the start never rises from step to step.
"""
from __future__ import annotations

import random
import re
from difflib import SequenceMatcher
from itertools import combinations
from typing import Callable, Sequence

import numpy as np

from core.lexicon.forms import FORMS, attested, inflect, is_lemma, lemmas_of, takes_form
from core.text import detokenize

from .grammar import agreement_variants
from .structure import CHANGES, READ_LIKE, verb_form

MAX_EDIT_PATH = 64  # sentences an edit path offers at most (2^edits grows fast)
Edit = tuple[int, int, list[str]]  # (start, end, new words): x's words [start:end] become `new words`


def _words(text: str) -> list[str]:
    """Words and punctuation of `text`, its first word in lower case unless it is "I" (it may move
    inside a sentence; the decoder's truecaser restores the capitals of names afterwards)."""
    words = re.findall(r"\w+(?:'\w+)?|[^\w\s]", text)
    if words and words[0] != "I":
        words[0] = words[0].lower()
    return words


def _lower(words: Sequence[str]) -> list[str]:
    return [w.lower() for w in words]


def word_edits(x: Sequence[str], y: Sequence[str]) -> list[Edit]:
    """The edits that turn the words x into y, smallest first: a replacement of as many words by as
    many is split into one edit a word (so "a dog is" -> "two dogs are" is three edits)."""
    edits: list[Edit] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(a=_lower(x), b=_lower(y), autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            edits.extend((i1 + k, i1 + k + 1, [y[j1 + k]]) for k in range(i2 - i1))
        else:
            edits.append((i1, i2, list(y[j1:j2])))
    return edits


def apply_edits(words: Sequence[str], edits: Sequence[Edit]) -> list[str]:
    """`words` with `edits` (non-overlapping, on `words`' own positions) applied."""
    out, at = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out += list(words[at:start]) + list(new)
        at = end
    return out + list(words[at:])


def _sentence(words: Sequence[str]) -> str:
    text = detokenize(words)
    return text[:1].upper() + text[1:]


def transfer_edit(a: str, b: str, c: str) -> str | None:
    """c with the word edits of a -> b applied where a's words stand in c; None when a and b are the
    same, or an edit's words (or, for an insertion, its neighbour) have no counterpart in c.

    A word of a that c shares is replaced as in b ("man" -> "woman"). A word of a that c lacks may
    stand at the same place in c, between the same shared words ("A dog is" / "A cat is"); there a
    change of form carries over ("dog" -> "dogs" makes "mouse" -> "mice"; `_same_form_change`). A
    change of form with no such place goes to c's word in the same form ("He eats an apple." ->
    "He ate an apple." makes "Our neighbour finds the keys." -> "... found the keys."; `_by_form`)."""
    wa, wb, wc = _words(a), _words(b), _words(c)
    edits = word_edits(wa, wb)
    if not edits:
        return None
    to_c = _counterparts(wa, wc)
    moved = []
    for start, end, new in edits:
        if end > start:
            replaced = _replacement_in_c(wa, wc, to_c, start, end, new)
            if replaced is None:
                return None
            moved.append(replaced)
        elif start == 0:
            moved.append((0, 0, new))
        elif start - 1 in to_c:
            moved.append((to_c[start - 1][0] + 1, to_c[start - 1][0] + 1, new))
        else:
            return None
    if len({(s, e) for s, e, _ in moved}) < len(moved):
        return None
    return _sentence(apply_edits(wc, moved))


def transfer_edits(a: str, b: str, c: str) -> list[str]:
    """Candidates for an analogy a : b :: c : ?, each c with the change that turns a into b: its word edits
    (`transfer_edit`) and, where a change of structure (core/vec2sent/structure.py: negation, a yes/no question,
    the passive, their inverses) turns a into b or nearer to it than a is, that change of c, with the word edits
    left over transferred ("The lamp is bright." -> "The lamps are not bright." makes "The road is wet." ->
    "The road is not wet." -> "The roads are not wet."). Distinct, the word edits' first; where a change turns a
    into b exactly, that change of c alone; none for a = b."""
    found, exact = [transfer_edit(a, b, c)], []
    wb, changed = _words(b), _changed_words(_words(a), _words(b))
    like = verb_form(a)  # c's verb read as a's is where it has two readings ("I read novels." like "I watch ...")
    for name, change in CHANGES.items():
        changed_a, changed_c = change(a), change(c, like=like) if name in READ_LIKE else change(c)
        if changed_a is None or changed_c is None:
            continue
        if _lower(_words(changed_a)) == _lower(wb):
            exact.append(changed_c)
        elif _changed_words(_words(changed_a), wb) < changed:
            found.append(transfer_edit(changed_a, b, changed_c))
    # a change that makes b of a says what the analogy does; word edits then copy b's words ("visited" -> "did not
    # visit" made "They forgot the tickets." "They did not visit the tickets.")
    return list(dict.fromkeys(exact or [t for t in found if t]))


def _changed_words(x: Sequence[str], y: Sequence[str]) -> int:
    """How many words the edits x -> y change: the larger side of each edit."""
    return sum(max(end - start, len(new)) for start, end, new in word_edits(x, y))


def _replacement_in_c(wa: Sequence[str], wc: Sequence[str], to_c: dict[int, tuple[int, str]], start: int,
                      end: int, new: list[str]) -> Edit | None:
    """The edit of c that stands for a's words [start:end] becoming `new`, or None when they have no place
    in c (`transfer_edit`)."""
    one_word = end - start == 1 and len(new) == 1
    if all(i in to_c for i in range(start, end)) and to_c[end - 1][0] - to_c[start][0] == end - start - 1:
        at = to_c[start][0]
        if one_word and to_c[start][1] != "same":
            changed = _same_form_change(wa[start], new[0], wc[at])
            return None if changed is None else (at, at + 1, [changed])
        return at, to_c[end - 1][0] + 1, [_carried(word, wa[start:end], wc[at:at + end - start]) for word in new]
    return _by_form(wa[start], new[0], wc, start / max(len(wa) - 1, 1)) if one_word else None


def _carried(word: str, old: Sequence[str], in_c: Sequence[str]) -> str:
    """A word of b that replaces a's words `old` (standing as `in_c` in c), as c has it: a form of one of `old`'s
    lemmas is c's word in that form ("took" -> "did not take" makes "ate" -> "did not eat", "writes" -> "is
    writing" makes "reads" -> "is reading"); any other word as it is."""
    for was, there in zip(old, in_c):
        if was.lower() != there.lower():
            changed = _same_form_change(was, word, there)
            if changed is not None:
                return changed
    return word


def _by_form(old: str, new: str, wc: Sequence[str], place: float) -> Edit | None:
    """c's word that is in the inflected form `old` is in and changes as `old` became `new` (a word whose
    lemma takes both forms; of several, the nearest to `place`, 0-1 along the sentence), or None."""
    found = []
    for i, word in enumerate(wc):
        changed = _same_form_change(old, new, word, inflected_only=True)
        if changed is not None:
            found.append((abs(i / max(len(wc) - 1, 1) - place), i, changed))
    if not found:
        return None
    _, at, changed = min(found)
    return at, at + 1, [changed]


def _counterparts(wa: Sequence[str], wc: Sequence[str]) -> dict[int, tuple[int, str]]:
    """a's word index -> (c's index, "same" or "placed"): along their common words, and word for word
    in a gap between two common stretches that holds as many words in both."""
    to_c: dict[int, tuple[int, str]] = {}
    blocks = SequenceMatcher(a=_lower(wa), b=_lower(wc), autojunk=False).get_matching_blocks()
    previous = (0, 0)
    for block in blocks:
        gap_a, gap_c = block.a - previous[0], block.b - previous[1]
        if gap_a == gap_c:
            to_c.update({previous[0] + k: (previous[1] + k, "placed") for k in range(gap_a)})
        to_c.update({block.a + k: (block.b + k, "same") for k in range(block.size)})
        previous = (block.a + block.size, block.b + block.size)
    return to_c


def _same_form_change(old: str, new: str, word: str, inflected_only: bool = False) -> str | None:
    """`word` changed as `old` became `new`, when that is a change of form (core/lexicon/forms.py: a
    lemma, plural or third person, past, -ing, comparative or superlative): "dog" -> "dogs" makes "mouse"
    -> "mice", "opens" -> "opened" makes "teaches" -> "taught", "eat" -> "ate" makes "eats" -> "ate" (a
    change of tense leaves the present's person behind). None when it is no such change (a different word:
    "tea" -> "coffee"), `word` is not in the same form as `old`, or its new form is not attested (never
    "eatsed"). `inflected_only`: only when `old` and `word` are inflected (not lemmas) and `word`'s lemma is a
    WordNet word that takes both forms ("keys" is no verb's third person to put in the past)."""
    old, new, lower = old.lower(), new.lower(), word.lower()
    for source in (FORMS if inflected_only else (None, *FORMS)):  # the form `old` is written in (None: a lemma)
        for lemma in _lemmas(old, source):
            for target in (None, *FORMS):
                if target != source and (lemma if target is None else inflect(lemma, target)) == new:
                    return _changed(lower, _word_sources(source, target), target, inflected_only)
    return None


def _word_sources(source: str | None, target: str | None) -> tuple[str | None, ...]:
    """The forms c's word may be in to change like a word in `source` changing to `target`: the same, and for a
    present put in the past either person of the present."""
    present = (None, "plural")
    return present if target == "past" and source in present else (source,)


def _changed(word: str, sources: tuple[str | None, ...], target: str | None, inflected_only: bool) -> str | None:
    """`word`, read as a form in `sources`, written in `target` when that is an attested word, else None."""
    for source in sources:
        for lemma in _lemmas(word, source):
            if (source is None and not is_lemma(lemma)) or (inflected_only and not (
                    takes_form(lemma, source) and (target is None or takes_form(lemma, target)))):
                continue
            written = lemma if target is None else attested(lemma, target)
            if written is not None:
                return written
    return None


def _lemmas(written: str, form: str | None) -> list[str]:
    """The lemmas `written` is `form` of (itself for None), WordNet's first."""
    if form is None:
        return [written]
    found = lemmas_of(written, form)
    return sorted(found, key=lambda lemma: not is_lemma(lemma))


def path_candidates(x: str, y: str, decoded: Sequence[str], edits: bool = True, cased: Callable[[str], str] = str
                    ) -> list[str]:
    """An interpolation's candidates: x, y, the interior points' `decoded` sentences and, with `edits`,
    `edit_path(x, y)` (`cased`: the decoder's casing of an edited sentence) without those that slip on agreement
    (`agreement_variants`: "Two NATO soldier killed", "Pakistanis votes"; 13.9 % of the sentences of their own the
    walk showed on the dev pairs had one, session 50)."""
    between = [cased(t) for t in edit_path(x, y)] if edits else []
    return list(dict.fromkeys([x, y, *decoded, *(t for t in between if not agreement_variants(t))]))


def edit_path(x: str, y: str, limit: int = MAX_EDIT_PATH, seed: int = 0) -> list[str]:
    """Sentences between x and y: x with some (not none, not all) of the word edits x -> y applied.
    With few edits every subset; with many, each edit alone, all but each one, the prefixes and
    suffixes in sentence order, then seeded random subsets, up to `limit` sentences."""
    wx, wy = _words(x), _words(y)
    edits = word_edits(wx, wy)
    n = len(edits)
    if n < 2:
        return []
    if 2 ** n - 2 <= limit:
        subsets = [s for k in range(1, n) for s in combinations(range(n), k)]
    else:
        subsets = [(i,) for i in range(n)] + [tuple(j for j in range(n) if j != i) for i in range(n)]
        subsets += [tuple(range(k)) for k in range(2, n - 1)] + [tuple(range(k, n)) for k in range(2, n - 1)]
        rng = random.Random(seed)
        while len(set(subsets)) < limit:
            subsets.append(tuple(sorted(rng.sample(range(n), rng.randint(2, n - 2)))))
    texts = [_sentence(apply_edits(wx, [edits[i] for i in subset])) for subset in dict.fromkeys(subsets)]
    return list(dict.fromkeys(texts))[:limit]


def walk(fits: np.ndarray, to_start: np.ndarray, bonus: np.ndarray) -> list[int]:
    """One candidate per point: fits (P, C) the cosine of each candidate to each point, to_start (C,)
    each candidate's cosine to the path's start, bonus (P, C) added to a fit (e.g. for a sentence of
    the point's own, -inf to rule a candidate out). Returns the candidates, one a point, with the
    highest total of fit + bonus whose cosine to the start never rises from point to point."""
    score = fits + bonus  # (P, C)
    order = np.argsort(-to_start, kind="stable")  # candidates from nearest the start to farthest
    # best[p, r]: the best total up to point p ending on a candidate of rank >= ... (non-increasing to_start
    # means the rank along `order` never decreases); a running maximum over ranks gives it in O(P C).
    ranked = score[:, order]  # (P, C)
    total = ranked[0].copy()
    back = np.zeros(ranked.shape, dtype=np.int64)
    for p in range(1, len(ranked)):
        best_before = np.maximum.accumulate(total)  # best total at p-1 over ranks <= r
        arg_before = _running_argmax(total)
        total = best_before + ranked[p]
        back[p] = arg_before
    path = [int(np.argmax(total))]
    for p in range(len(ranked) - 1, 0, -1):
        path.append(int(back[p, path[-1]]))
    return [int(order[r]) for r in reversed(path)]


def _running_argmax(values: np.ndarray) -> np.ndarray:
    """For each r, the index of the largest of values[:r + 1] (the first on ties)."""
    out, best = np.zeros(len(values), dtype=np.int64), 0
    for r, value in enumerate(values):
        if value > values[best]:
            best = r
        out[r] = best
    return out

"""Agreement repairs of a chosen sentence, judged by a language model.

A decoding of a vector that is no sentence's (an analogy's b - a + c) often fits the vector best with an
agreement slip: "Four mouse are running.", "She has two sister.", "Three woman are jumping.". Its
minimal variants, one word's number, a verb's person or an article changed (`agreement_variants`), mean
about the same; a language model tells the grammatical one (`repair`), and the encoder checks that it
still fits the vector. Word lists and spelling rules: core/lexicon/forms.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from core.lexicon.forms import attested, is_noun, lemmas_of, readings, regularised, takes_form
from core.lexicon.spelling import spelling_key
from core.text import detokenize
from core.vec2sent.fit import fits_of

# Cues of number: a noun after a plural cue is plural, after a singular cue singular.
_PLURAL_CUES = frozenset("two three four five six seven eight nine ten eleven twelve many several few both these those".split())
_SINGULAR_CUES = frozenset("a an one this that each every another".split())
# Pronouns and the forms of be, have and do that agree with them (the third-person singular, the rest).
_SINGULAR_PRONOUNS, _PLURAL_PRONOUNS = frozenset("he she it".split()), frozenset("we they you".split())
_AGREEING = {"is": "are", "was": "were", "has": "have", "does": "do", "isn't": "aren't", "wasn't": "weren't",
             "doesn't": "don't"}
_AGREEING_PLURAL = {plural: singular for singular, plural in _AGREEING.items()}
# Do-support: the verb after these (and "not", or a question's subject) is in its plain form.
_DO, _DO_NOT = frozenset("do does did".split()), frozenset("don't doesn't didn't".split())
_SUBJECT_PRONOUNS = _SINGULAR_PRONOUNS | _PLURAL_PRONOUNS | {"i"}
_DETERMINERS = frozenset("the a an my your his her its our their this that these those".split())


# Words whose look-alike plural or singular is another word ("us" -> "u", "news"): never counted.
_FIXED_NOUNS = frozenset("i me us it its his hers news this that the".split())


@dataclass(frozen=True)
class RepairSettings:
    """gain: the log-probability (nats) a variant must gain over the sentence to replace it; margin: how much
    lower its cosine to the vector may be; rounds: variants of variants (two slips need two rounds)."""
    gain: float = 1.0
    margin: float = 0.05
    rounds: int = 2

    def __post_init__(self) -> None:
        if not 0 <= self.gain <= 100 or not 0 <= self.margin <= 0.5 or not 1 <= self.rounds <= 4:
            raise ValueError(f"a repair needs gain in [0, 100], margin in [0, 0.5] and rounds in 1-4, not "
                             f"{self.gain}, {self.margin} and {self.rounds}")


def sentence_key(text: str) -> tuple[str, ...]:
    """The words of `text` in lower case, each in its WordNet spelling ("neighbour" = "neighbor"), punctuation
    left out: two sentences with one key say the same thing the same way."""
    return tuple(spelling_key(w) for w in re.findall(r"[a-z0-9']+", text.lower()))


def told_keys(given: Sequence[str]) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """What an analogy's `given` sentences (a, b, c) say, to leave out of its answers: their `sentence_key`s, and
    their keys without articles when no two of them differ in their articles alone (the analogy is not about "a"
    / "the": "They ride the horse." then says what "They ride a horse." says)."""
    keys = {sentence_key(t) for t in given}
    bare = {_without_articles(k) for k in keys}
    return keys, (bare if len(bare) == len(keys) else set())


def is_told(text: str, told: tuple[set[tuple[str, ...]], set[tuple[str, ...]]]) -> bool:
    """Whether `text` says what one of the given sentences says (`told_keys`)."""
    key = sentence_key(text)
    return key in told[0] or _without_articles(key) in told[1]


def _without_articles(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(w for w in key if w not in ("a", "an", "the"))


def agreement_variants(text: str) -> list[str]:
    """`text` with one word changed where a neighbour shows that it disagrees in number or person: a noun
    after a plural cue put in the plural ("two sister" -> "two sisters", "four mouse" -> "four mice") and
    after a singular cue in the singular; "is" / "are" and the like, and a verb's third person, agreeing with
    the pronoun or plural noun before them ("he are", "they runs", "the dogs is") or the pronoun after
    ("are he"); "a" / "an" before a vowel letter or not; a word written by spelling rules alone as the lexicon
    writes it ("two loafs" -> "two loaves", "she taked" -> "she took"); a verb after do-support in its plain form
    ("did not took" -> "did not take", "Did we booked" -> "Did we book"). Each variant changes one word; none when
    nothing disagrees."""
    words = re.findall(r"\w+(?:'\w+)?|[^\w\s]", text)
    lower = [w.lower() for w in words]
    variants = []
    for i, word in enumerate(lower):
        before = lower[i - 1] if i else ""
        after = lower[i + 1] if i + 1 < len(lower) else ""
        for fixed in (_agreeing(word, before, after), *regularised(word), _after_do(lower, i)):
            if fixed is not None and fixed != word:
                changed = fixed[:1].upper() + fixed[1:] if words[i][:1].isupper() else fixed
                variants.append(detokenize([*words[:i], changed, *words[i + 1:]]))
    return list(dict.fromkeys(variants))


def _agreeing(word: str, before: str, after: str) -> str | None:
    """`word` as its neighbours `before` and `after` (lower case, "" at an end) want it, or None when they
    say nothing of its number or the form they want is not attested."""
    if word in ("a", "an") and after[:1].isalpha():
        return "an" if after[0] in "aeiou" else "a"
    plural_before = before in _PLURAL_PRONOUNS or _is_plural_noun(before)
    if word in _AGREEING or word in _AGREEING_PLURAL:
        singular = _AGREEING_PLURAL.get(word, word)
        if plural_before or (not before and after in _PLURAL_PRONOUNS):
            return _AGREEING[singular]
        if before in _SINGULAR_PRONOUNS or (not before and after in _SINGULAR_PRONOUNS):
            return singular
        return None
    if before in _PLURAL_CUES and _singular_noun(word):
        return attested(word, "plural")  # None for a plural no word list knows ("offsprings")
    if before in _SINGULAR_CUES and _is_plural_noun(word):
        return _singular(word)
    third = [lemma for lemma in lemmas_of(word, "plural") if _verb(lemma)]
    if third and (before in _PLURAL_PRONOUNS | {"i"} or _is_plural_noun(before)):
        return third[0]  # "they runs" -> "they run", "two geese sleeps" -> "... sleep"
    if _verb(word) and before in _SINGULAR_PRONOUNS:
        return attested(word, "third")  # "he run" -> "he runs", "she do" -> "she does"
    return None


def _after_do(lower: Sequence[str], i: int) -> str | None:
    """The plain form of the verb at `i` (lower-case words) when do-support wants one and it is in the past or the
    third person: after "did not" / "didn't", or after the subject of a question that begins with "do" ("Did we
    booked", "Does the shop sells"); else None."""
    negated = i >= 1 and (lower[i - 1] in _DO_NOT or (i >= 2 and lower[i - 1] == "not" and lower[i - 2] in _DO))
    asked = lower[0] in _DO and ((i == 2 and lower[1] in _SUBJECT_PRONOUNS) or (i == 3 and lower[1] in _DETERMINERS))
    if not (negated or asked):
        return None
    return next((lemma for lemma, form in readings(lower[i]) if form in ("past", "third") and _verb(lemma)), None)


def _singular_noun(word: str) -> bool:
    return word not in _FIXED_NOUNS and is_noun(word) and not _is_plural_noun(word)


def _is_plural_noun(word: str) -> bool:
    return word not in _FIXED_NOUNS and any(is_noun(lemma) for lemma in lemmas_of(word, "plural"))


def _singular(word: str) -> str:
    return next(lemma for lemma in lemmas_of(word, "plural") if is_noun(lemma))


def _verb(word: str) -> bool:
    return takes_form(word, "past")


def repair(text: str, vector: np.ndarray, encode: Callable[[list[str]], np.ndarray],
           log_probs: Callable[[Sequence[str]], np.ndarray], settings: RepairSettings = RepairSettings()) -> str:
    """`text`, or the variant of it (`agreement_variants`, `settings.rounds` times over) that a language model
    (`log_probs`, nats) reads at least `settings.gain` more fluently and whose cosine to `vector` (d,) is within
    `settings.margin` of `text`'s; `encode` embeds texts (n, d)."""
    for _ in range(settings.rounds):
        variants = agreement_variants(text)
        if not variants:
            return text
        fits = np.asarray(fits_of([text, *variants], vector, encode))  # (1 + V,)
        nats = np.asarray(log_probs([text, *variants]), dtype=np.float64)  # (1 + V,)
        allowed = (fits[1:] >= fits[0] - settings.margin) & (nats[1:] >= nats[0] + settings.gain)
        if not allowed.any():
            return text
        text = variants[int(np.argmax(np.where(allowed, nats[1:], -np.inf)))]
    return text

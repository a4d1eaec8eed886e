"""Changes of a simple sentence's structure (issue 74): negation with do-support or after an auxiliary, yes/no
questions, the passive, their inverses, and the past tense. An analogy a : b :: c : ? whose b is one of them applied to a (perhaps
with word edits besides) offers c with the same change as a candidate (core/vec2sent/paths.py `transfer_edits`).

    negated("He took the bus.")                 # "He did not take the bus."
    asked("She can swim.")                      # "Can she swim?"
    passive("The wind broke the branch.")       # "The branch was broken by the wind."
    active("The vase was broken by the cat.")   # "The cat broke the vase."

Each reads one clause, subject + verb (+ the rest), with the verb forms of core/lexicon/forms.py's table of
attested forms, and returns None for a sentence it cannot read that way: a candidate, never a guess shown as such.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from core.lexicon.forms import attested, readings, takes_form
from core.text import detokenize

_BE = {"am": "past", "is": "third", "are": "plain", "was": "past", "were": "past"}
_MODALS = frozenset("can will would should must may might could shall".split())
_AUXILIARIES = frozenset({*_BE, *_MODALS, "do", "does", "did", "has", "have", "had"})
_PRONOUNS = {"i": "me", "you": "you", "he": "him", "she": "her", "it": "it", "we": "us", "they": "them"}
_OBJECT_PRONOUNS = {v: k for k, v in _PRONOUNS.items() if k != "you"} | {"you": "you"}
_PLURAL_SUBJECTS = frozenset("we they you".split())
_DETERMINERS = frozenset("the a an my your his her its our their this that these those one two three four five "
                         "some every each no".split())


@dataclass(frozen=True)
class Clause:
    """subject + [auxiliary] [not] verb + rest + end: the words of a simple declarative sentence."""
    subject: tuple[str, ...]
    auxiliary: str | None  # "did", "can", "is", ...; None for a verb alone
    negated: bool
    verb: str | None  # None after be ("He is tired.")
    rest: tuple[str, ...]
    end: str

    def words(self) -> list[str]:
        aux = (["cannot"] if self.auxiliary == "can" and self.negated
               else [self.auxiliary, *(["not"] if self.negated else [])] if self.auxiliary else [])
        return [*self.subject, *aux, *([self.verb] if self.verb else []), *self.rest]


def _tokens(text: str) -> tuple[list[str], str]:
    words = re.findall(r"\w+(?:'\w+)?|[^\w\s]", text)
    end = words.pop() if words and words[-1] in ".?!" else "."
    if words and words[0] != "I":
        words[0] = words[0].lower()
    return words, end


def _sentence(words: list[str], end: str) -> str:
    text = detokenize([*words, end])
    return text[:1].upper() + text[1:]


def _verb_forms(word: str) -> list[tuple[str, str]]:
    """(lemma, form) readings of `word` as a verb: "past", "third" or "plain" (a verb lemma)."""
    found = [(lemma, form) for lemma, form in readings(word) if form in ("past", "third") and takes_form(lemma, "past")]
    if takes_form(word, "past"):
        found.append((word, "plain"))
    return found


def parse(text: str) -> Clause | None:
    """The clause of a declarative sentence of one subject ("The old dog", "She", "My friend") and its verb, or None."""
    words, end = _tokens(text)
    if end == "?" or len(words) < 2:
        return None
    start = 1 if words[0].lower() in _PRONOUNS or words[0][:1].isupper() else 2 if words[0] in _DETERMINERS else None
    if start is None:
        return None
    for i in range(start, min(len(words), start + 3)):
        word = words[i].lower()
        if word == "cannot":
            return Clause(tuple(words[:i]), "can", True, *_verb_and_rest(words[i + 1:]), end)
        if word in _AUXILIARIES:
            negated = i + 1 < len(words) and words[i + 1].lower() == "not"
            after = words[i + 2 if negated else i + 1:]
            verb, rest = _verb_and_rest(after) if word not in _BE else (None, tuple(after))
            return Clause(tuple(words[:i]), word, negated, verb, rest, end)
        if _verb_forms(word):
            return Clause(tuple(words[:i]), None, False, word, tuple(words[i + 1:]), end)
    return None


def _verb_and_rest(words: list[str]) -> tuple[str | None, tuple[str, ...]]:
    return (words[0], tuple(words[1:])) if words else (None, ())


def _form(verb: str, subject: tuple[str, ...], like: str | None = None) -> tuple[str, str] | None:
    """The (lemma, form) `verb` is read as after `subject` (a present after "she" is the third person); of two
    readings ("I read": the present or the past), the one in the form `like` when one is."""
    forms = _verb_forms(verb.lower())
    singular = not (subject[-1].lower() in _PLURAL_SUBJECTS | {"i"} or _plural_noun(subject[-1]))
    preferred = [f for f in forms if f[1] != ("plain" if singular else "third")]
    preferred = [f for f in preferred if f[1] == like] or preferred
    return (preferred or forms or [None])[0]


def verb_form(text: str) -> str | None:
    """The form of the verb of `text` when it has no auxiliary ("past", "third" or "plain"), else None: what an
    analogy's c is read like where its verb has two readings (`READ_LIKE`)."""
    clause = parse(text)
    if clause is None or clause.auxiliary or clause.verb is None:
        return None
    return (_form(clause.verb, clause.subject) or (None, None))[1]


def _plural_noun(word: str) -> bool:
    return any(form == "plural" for _, form in readings(word.lower()))


def negated(text: str, like: str | None = None) -> str | None:
    """`text` negated: "not" after its auxiliary ("She can swim." -> "She cannot swim.") or with do-support
    ("He took the bus." -> "He did not take the bus."); None when it is negated already or is not read. `like`:
    the form to read a verb of two readings in ("I read novels.": "plain" -> "do not read", "past" -> "did not")."""
    clause = parse(text)
    if clause is None or clause.negated:
        return None
    if clause.auxiliary:
        return _sentence(replace(clause, negated=True).words(), clause.end)
    lemma, form = _form(clause.verb, clause.subject, like) or (None, None)
    if lemma is None:
        return None
    do = {"past": "did", "third": "does", "plain": "do"}[form]
    return _sentence(replace(clause, auxiliary=do, negated=True, verb=lemma).words(), clause.end)


def affirmed(text: str) -> str | None:
    """A negated `text` without its negation ("He did not take the bus." -> "He took the bus."), else None."""
    clause = parse(text)
    if clause is None or not clause.negated:
        return None
    if clause.auxiliary in ("do", "does", "did") and clause.verb:
        form = {"did": "past", "does": "third", "do": None}[clause.auxiliary]
        verb = attested(clause.verb, form) if form else clause.verb
        return None if verb is None else _sentence([*clause.subject, verb, *clause.rest], clause.end)
    return _sentence(replace(clause, negated=False).words(), clause.end)


def asked(text: str, like: str | None = None) -> str | None:
    """The yes/no question of a statement: its auxiliary first ("Can she swim?") or do-support ("Does she like
    tea?", "Did they go home?"); None when it is not read. `like`: as for `negated`."""
    clause = parse(text)
    if clause is None:
        return None
    subject = [_inside(clause.subject[0]), *clause.subject[1:]]
    if clause.auxiliary:
        negation = ["not"] if clause.negated else []
        return _sentence([clause.auxiliary, *subject, *negation, *([clause.verb] if clause.verb else []),
                          *clause.rest], "?")
    lemma, form = _form(clause.verb, clause.subject, like) or (None, None)
    if lemma is None:
        return None
    return _sentence([{"past": "did", "third": "does", "plain": "do"}[form], *subject, lemma, *clause.rest], "?")


def stated(text: str) -> str | None:
    """The statement of a yes/no question ("Did she feed the cat?" -> "She fed the cat."), else None."""
    words, end = _tokens(text)
    if end != "?" or len(words) < 3 or words[0].lower() not in _AUXILIARIES:
        return None
    aux, subject_end = words[0].lower(), 2 if words[1].lower() in _PRONOUNS else 3
    subject, after = words[1:subject_end], words[subject_end:]
    if not after:
        return None
    subject[0] = subject[0] if subject[0] == "I" else subject[0].lower()
    if aux in ("do", "does", "did"):
        form = {"did": "past", "does": "third", "do": None}[aux]
        verb = attested(after[0].lower(), form) if form else after[0]
        return None if verb is None else _sentence([*subject, verb, *after[1:]], ".")
    return _sentence([*subject, aux, *after], ".")


def passive(text: str, like: str | None = None) -> str | None:
    """The passive of an active sentence with a verb alone and an object ("The wind broke the branch." -> "The
    branch was broken by the wind."), in its tense; None when it is not read so. `like`: as for `negated`."""
    clause = parse(text)
    if clause is None or clause.auxiliary or not clause.rest:
        return None
    lemma, form = _form(clause.verb, clause.subject, like) or (None, None)
    participle = attested(lemma, "participle") if lemma else None
    patient = list(clause.rest)
    if participle is None or not (patient[0].lower() in _OBJECT_PRONOUNS or patient[0].lower() in _DETERMINERS):
        return None
    plural = patient[0].lower() in ("us", "them") or _plural_noun(patient[-1])
    be = ("were" if plural else "was") if form == "past" else ("are" if plural else "is")
    subject = [_OBJECT_PRONOUNS.get(patient[0].lower(), patient[0]), *patient[1:]]
    agent = [_PRONOUNS.get(clause.subject[0].lower(), _inside(clause.subject[0])), *clause.subject[1:]]
    return _sentence([*subject, be, participle, "by", *agent], clause.end)


def active(text: str) -> str | None:
    """The active of a passive sentence with its agent ("The vase was broken by the cat." -> "The cat broke the
    vase."); None when it is not read so."""
    clause = parse(text)
    if clause is None or clause.auxiliary not in _BE or clause.negated or len(clause.rest) < 3 or "by" not in clause.rest:
        return None
    participle, by = clause.rest[0].lower(), clause.rest.index("by")
    agent = list(clause.rest[by + 1:])
    lemmas = [lemma for lemma, form in readings(participle) if form == "participle"]
    if by != 1 or not agent or not lemmas:
        return None
    third = not (agent[0].lower() in _PLURAL_SUBJECTS | {"i"} or _plural_noun(agent[-1]))
    form = "past" if clause.auxiliary in ("was", "were") else "third" if third else None
    verb = attested(lemmas[0], form) if form else lemmas[0]
    patient = [_PRONOUNS.get(clause.subject[0].lower(), _inside(clause.subject[0])), *clause.subject[1:]]
    subject = [_OBJECT_PRONOUNS.get(agent[0].lower(), agent[0]), *agent[1:]]
    patient[0] = "me" if patient[0] == "i" else patient[0]
    return None if verb is None else _sentence([*subject, verb, *patient], clause.end)


def past(text: str, like: str | None = None) -> str | None:
    """`text` in the past: its verb's past ("They go home." -> "They went home."), "was" / "were" for "am",
    "is", "are", "did" for "do" / "does"; None when it is in the past already, has a modal or is not read."""
    clause = parse(text)
    if clause is None or clause.auxiliary in _MODALS or clause.auxiliary in ("was", "were", "did", "had"):
        return None
    if clause.auxiliary:
        now = {"am": "was", "is": "was", "are": "were", "do": "did", "does": "did", "has": "had", "have": "had"}
        return _sentence(replace(clause, auxiliary=now[clause.auxiliary]).words(), clause.end)
    lemma, form = _form(clause.verb, clause.subject, like) or (None, None)
    written = attested(lemma, "past") if form in ("plain", "third") else None
    return None if written is None else _sentence(replace(clause, verb=written).words(), clause.end)


def _inside(word: str) -> str:
    """A sentence's first word as it is written inside one: lower case unless "I" or a name."""
    return word if word == "I" or word.lower() not in _PRONOUNS | dict.fromkeys(_DETERMINERS) else word.lower()


CHANGES: dict[str, Callable[[str], str | None]] = {
    "negated": negated, "affirmed": affirmed, "asked": asked, "stated": stated, "passive": passive, "active": active,
    "past": past}
# the changes that read a verb and take `like`, the form to read a verb of two readings in
READ_LIKE = frozenset({"negated", "asked", "passive", "past"})

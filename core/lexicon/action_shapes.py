"""A dictionary's gloss of an action or a state rewritten, by rule, into the shapes people use for them (issue 60,
item 1): "cut or make a notch into" (notch, a verb) becomes

    "to cut or make a notch into"              "when you cut or make a notch into"
    "when somebody cuts or makes a notch into" "if you cut or make a notch into"
    "the act of cutting or making a notch into"

and "not in active use" (idle, an adjective) "when you are not in active use", "when something is not in active use".
Only the gloss's first clause is kept (WordNet's "; ..." alternatives say the same again), a parenthesis at its
start ("(color) giving no sensation of warmth") is dropped, and "one's" / "oneself" follow the subject. The verb
that opens the gloss is conjugated (`core.lexicon.forms`), and so is a verb coordinated right after it ("cut or
make"); adjective glosses that only classify ("of or relating to ...") are left out (`action_shapes` gives {}).

    action_shapes("cut or make a notch into", "v")["the act of"]   # "the act of cutting or making a notch into"
"""
from __future__ import annotations

import random
import re
from typing import Sequence

from ..text import query_words
from .dictionary import Entry
from .forms import inflect, pos_tags, third_person

VERB_SHAPES = ("to", "when you", "when somebody", "if you", "the act of")
STATE_SHAPES = ("when you", "when something", "if you")
_SUBJECT = {"when you": "you", "if you": "you", "when somebody": "somebody", "when something": "something"}
_OWN = {"you": ("your", "yourself"), "somebody": ("their", "themselves"), "something": ("its", "itself")}
_BE = {"you": "are", "somebody": "is", "something": "is"}
_HAVE = {"you": "have", "somebody": "has", "something": "has"}
DEV_ACTIONS = 300  # verbs of the dev slice (`action_queries`); and a fifth as many adjectives (states)
_CLASSIFYING = re.compile(r"^(of|relating|pertaining|belonging|characteristic of|denoting|used|the |a |an |\d)")


def action_shapes(gloss: str, pos: str) -> dict[str, str]:
    """{shape: the gloss in that shape} for a verb's gloss (pos "v": `VERB_SHAPES`) or an adjective's (pos "a" or
    "s": `STATE_SHAPES`); {} for another part of speech, an empty gloss or an adjective gloss that classifies."""
    words = _first_clause(gloss).split()
    if not words:
        return {}
    if pos == "v":
        if words[0] == "to" and len(words) > 1:
            words = words[1:]
        return {shape: _verb_shape(words, shape) for shape in VERB_SHAPES}
    if pos in ("a", "s") and not _CLASSIFYING.match(" ".join(words)):
        return {shape: _state_shape(words, shape) for shape in STATE_SHAPES}
    return {}


def _first_clause(gloss: str) -> str:
    """The gloss up to its first ";", without a leading parenthesis, its spaces made single."""
    clause = gloss.split(";")[0].strip()
    clause = re.sub(r"^\([^)]*\)\s*", "", clause)
    return " ".join(clause.split())


def _verb_shape(words: list[str], shape: str) -> str:
    """The verb gloss `words` (base form first) in `shape`."""
    if shape == "to":
        return "to " + " ".join(words)
    if shape == "the act of":
        return "the act of " + " ".join(_conjugated(words, lambda verb: inflect(verb, "ing")))
    subject = _SUBJECT[shape]
    if words[0] == "not" and len(words) > 1:  # "not go to bed": "when you do not go", "when somebody does not go"
        return " ".join([shape, "do" if subject == "you" else "does", *_own(words, subject)])
    if subject == "you":
        written = _conjugated(words, lambda verb: "are" if verb == "be" else verb)
    else:
        written = _conjugated(words, lambda verb: "is" if verb == "be" else third_person(verb))
    return f"{shape} " + " ".join(_own(written, subject))


def _state_shape(words: list[str], shape: str) -> str:
    """The adjective gloss `words` in `shape`: "having X" -> "when you have X", else "when you are X"."""
    subject = _SUBJECT[shape]
    if words[0] in ("having", "being"):
        verb = _HAVE[subject] if words[0] == "having" else _BE[subject]
        return " ".join([shape, verb, *_own(words[1:], subject)])
    return " ".join([shape, _BE[subject], *_own(words, subject)])


def _conjugated(words: list[str], conjugate) -> list[str]:
    """`words` with its first word conjugated, and each verb coordinated right after a conjugated one ("cut or
    make", "join and fuse"): a WordNet verb after "or" / "and" that follows a conjugated word."""
    if words[0] == "not" and len(words) > 1:  # "not go": "not going"
        return ["not", *_conjugated(words[1:], conjugate)]
    first = words[0].rstrip(",")
    out, last = [conjugate(first) + words[0][len(first):]], 0
    for i in range(1, len(words)):
        word, comma = words[i].rstrip(","), words[i][len(words[i].rstrip(",")):]
        if i >= 2 and last == i - 2 and words[i - 1] in ("or", "and") and "v" in pos_tags(word):
            out.append(conjugate(word) + comma)
            last = i
        else:
            out.append(words[i])
    return out


def _own(words: list[str], subject: str) -> list[str]:
    """"one's" and "oneself" written for `subject` ("your", "yourself" for you)."""
    possessive, reflexive = _OWN[subject]
    return [possessive if w == "one's" else reflexive if w == "oneself" else w for w in words]


def action_queries(entries: Sequence[Entry], verbs: int = DEV_ACTIONS, states: int = DEV_ACTIONS // 5,
                   seed: int = 0) -> list[Entry]:
    """A seeded sample of `verbs` verb and `states` adjective senses of `entries` (a split's dev part: never test
    words, never training ones), each gloss rewritten in one of its shapes (in turn), as (word, description)
    entries: a slice of action descriptions made from the project's own sources. A description that holds its
    own word is left out (the app leaves the query's words out of the answers)."""
    rng = random.Random(seed)
    out = []
    for kinds, count in (({"v"}, verbs), ({"a", "s"}, states)):
        rewritten = [(entry, shapes) for entry in entries if entry.pos in kinds
                     if (shapes := action_shapes(entry.definition, entry.pos))]
        chosen = []
        for entry, shapes in rng.sample(rewritten, len(rewritten)):
            text = list(shapes.values())[len(chosen) % len(shapes)]
            if entry.word not in query_words(text):
                chosen.append(Entry(entry.word, text, entry.pos, synset=entry.synset))
            if len(chosen) == count:
                break
        out += chosen
    return out


def glosses_and_shapes(entries: Sequence[Entry]) -> list[str]:
    """Each entry's gloss and its `action_shapes`: what an evaluation's index leaves out with a held-out gloss."""
    return [text for entry in entries
            for text in (entry.definition, *action_shapes(entry.definition, entry.pos).values())]

"""Sentences rewritten in the styles the corpus lacks (issue 59, item 4): headlines and posts.

The registries hold almost no headlines or tweets, so the decoder learns their shape from the corpus'
own sentences rewritten by rule, the way people write them:

- `headline`: telegraphic news style. Articles and the final full stop go, a passive loses its
  auxiliary ("was arrested" -> "arrested"), a perfect or a simple past turns present ("has signed",
  "signed" -> "signs"), "will" becomes "to", weekday adverbials go, and "X, officials said" becomes
  "Officials: X".
- `post`: a social-media post: no final full stop, a hashtag, "RT @name:" or a casual ending now and then.

Both are seeded by the caller's `random.Random` and return None for a sentence they cannot rewrite
(a question, a quotation, too short or too long).
"""
from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

from core.atomic import save_text_atomically
from core.lexicon.forms import inflect, lemmas_written_as

ARTICLES = frozenset({"a", "an", "the", "A", "An", "The"})
BE = frozenset({"is", "are", "was", "were", "has been", "have been", "had been", "is being", "are being"})
HAVE = frozenset({"has", "have", "had"})
AUXILIARIES = frozenset({"is", "are", "was", "were", "has", "have", "had", "been", "being"})
PLURAL_SUBJECTS = frozenset({"i", "you", "we", "they", "people", "children", "men", "women", "police"})
WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_WEEKDAY = re.compile(rf"\s*,?\s*\b(on|last|this|early|late)?\s*({WEEKDAYS})\b( (morning|afternoon|evening|night))?",
                      re.IGNORECASE)
_PAST_TIME = re.compile(r"\s*,?\s*\b(yesterday|last (week|month|year|night)|earlier this (week|month|year))\b",
                        re.IGNORECASE)
_SAID = re.compile(r"^(?P<what>.+?),\s+(?P<who>(?:[A-Za-z.'-]+\s){0,3}[A-Za-z.'-]+)\s+(?:said|says|told \w+)$")
_OPENERS = re.compile(r"^(However|But|And|Meanwhile|Also|In addition|Still|So|Yet|Moreover),?\s+", re.IGNORECASE)
_PRESENT_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes"}
HEADLINE_WORDS = (3, 16)
POST_WORDS = (3, 25)
HANDLES = ("news", "daily", "world", "local", "update", "live", "report", "today")
CASUAL_ENDINGS = (" lol", "!!", " :)", "...", " haha", "!")


def third_person(lemma: str) -> str:
    """The verb's present third person singular: say -> says, go -> goes, try -> tries."""
    if lemma in _PRESENT_IRREGULAR:
        return _PRESENT_IRREGULAR[lemma]
    if lemma.endswith("o") and not lemma.endswith("oo"):
        return lemma + "es"
    return inflect(lemma, "plural")


def _verb_lemma(word: str) -> str | None:
    """The verb whose past form is `word` ("signed": sign, "said": say), or None."""
    lemmas = [lemma for lemma in lemmas_written_as(word.lower(), "past") if " " not in lemma]
    return lemmas[0] if lemmas else None


def _present(lemma: str, subject: str) -> str:
    """The verb's present after `subject` (the word before it): base form after a plural or I/you/we/they."""
    plural = subject.lower() in PLURAL_SUBJECTS or (subject.endswith("s") and not subject.endswith(("ss", "us", "is")))
    return lemma if plural else third_person(lemma)


def _tense_to_present(words: list[str]) -> list[str]:
    """The first verb group turned headline-present: BE + participle -> participle, HAVE + participle or a
    simple past -> present, will + verb -> to + verb. Only the first group changes."""
    for i in range(1, len(words)):
        low = words[i].lower()
        if low == "will" and i + 1 < len(words):
            return words[:i] + ["to"] + words[i + 1:]
        if low in AUXILIARIES:
            group = 1
            while i + group < len(words) and words[i + group].lower() in AUXILIARIES:
                group += 1
            lemma = _verb_lemma(words[i + group]) if i + group < len(words) else None
            if lemma is None:
                return words
            auxiliaries = " ".join(w.lower() for w in words[i:i + group])
            if auxiliaries in BE:  # a passive: "was arrested" -> "arrested"
                return words[:i] + words[i + group:]
            if auxiliaries in HAVE:  # a perfect: "has signed" -> "signs"
                return words[:i] + [_present(lemma, words[i - 1])] + words[i + group + 1:]
            return words
        lemma = _verb_lemma(words[i])
        if lemma is not None:  # a simple past: "signed" -> "signs"
            return words[:i] + [_present(lemma, words[i - 1])] + words[i + 1:]
    return words


def headline(sentence: str, rng: random.Random) -> str | None:
    """`sentence` in a news headline's telegraphic style, or None where it does not fit one."""
    text = sentence.strip()
    if not text.endswith(".") or '"' in text or "?" in text or text.count(",") > 2:
        return None
    text = _OPENERS.sub("", text[:-1].strip())
    text = _PAST_TIME.sub("", _WEEKDAY.sub("", text)).strip(" ,")
    said = _SAID.match(text)
    if said and rng.random() < 0.7:
        who = said["who"][0].upper() + said["who"][1:]
        text = f"{who}: {said['what']}"
    words = [w for w in text.split() if w not in ARTICLES or rng.random() < 0.1]
    words = _tense_to_present(words)
    if not HEADLINE_WORDS[0] <= len(words) <= HEADLINE_WORDS[1]:
        return None
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words)


def post(sentence: str, rng: random.Random) -> str | None:
    """`sentence` as a social-media post, or None where it is too short or long, or a quotation."""
    text = sentence.strip()
    words = text.split()
    if '"' in text or not POST_WORDS[0] <= len(words) <= POST_WORDS[1]:
        return None
    if text.endswith(".") and rng.random() < 0.7:
        text = text[:-1]
    tag_from = [w.strip(".,!?;:") for w in words if len(w.strip(".,!?;:")) >= 5 and w.strip(".,!?;:").isalpha()]
    if tag_from and rng.random() < 0.4:
        tag = rng.choice(tag_from)
        text = text.replace(tag, "#" + tag, 1) if rng.random() < 0.5 else f"{text} #{tag.lower()}"
    if rng.random() < 0.1:
        text = f"RT @{rng.choice(HANDLES)}{rng.choice(HANDLES)}: {text}"
    elif not text.endswith(("?", "!")) and rng.random() < 0.15:
        text += rng.choice(CASUAL_ENDINGS)
    return text


HEADLINE_GENRES = frozenset({"news", "speeches", "mixed"})
POST_GENRES = frozenset({"web", "email", "quotations", "dialogue", "reviews", "questions", "captions", "news"})


def styled_corpus(train: list[str], genres: list[str], replay: int, headlines: int, posts: int,
                  seed: int = 13) -> tuple[list[str], dict]:
    """A training mix for the styles: up to `headlines` headline and `posts` post rewrites of the train
    sentences of their genres (each sentence rewritten once), and the first `replay` train sentences as
    they are, so the other genres are not forgotten. Returns the shuffled sentences and their counts."""
    rng = random.Random(seed)
    made = {"headline": [], "post": []}
    wanted = {"headline": headlines, "post": posts}
    for sentence, genre in zip(train, genres):
        if all(len(made[k]) >= wanted[k] for k in made):
            break
        kinds = [k for k, g in (("headline", HEADLINE_GENRES), ("post", POST_GENRES))
                 if genre in g and len(made[k]) < wanted[k]]
        if kinds:
            kind = rng.choice(kinds)
            rewritten = (headline if kind == "headline" else post)(sentence, rng)
            if rewritten and rewritten != sentence:
                made[kind].append(rewritten)
    mix = list(dict.fromkeys(train[:replay] + made["headline"] + made["post"]))
    rng.shuffle(mix)
    return mix, {"replay": min(replay, len(train)), "headlines": len(made["headline"]), "posts": len(made["post"]),
                 "train": len(mix), "seed": seed}


def write_styled_corpus(source: Path, out: Path, replay: int, headlines: int, posts: int, seed: int = 13) -> dict:
    """`styled_corpus` of the modern corpus in `source` (its train.txt and train-genres.txt) written to `out` as
    a corpus folder: train.txt (replaced atomically), its held-out set and corpus.json. Returns the counts."""
    genres_file = source / "train-genres.txt"
    if not genres_file.is_file():
        raise FileNotFoundError(f"{genres_file} is missing: build the modern corpus again (vec2sent-corpus --modern)")
    train = (source / "train.txt").read_text(encoding="utf-8").splitlines()
    genres = genres_file.read_text(encoding="utf-8").splitlines()
    if len(genres) != len(train):
        raise ValueError(f"{genres_file} has {len(genres)} lines for {len(train)} in train.txt: build the corpus again")
    mix, stats = styled_corpus(train, genres, replay, headlines, posts, seed)
    out.mkdir(parents=True, exist_ok=True)
    save_text_atomically(out / "train.txt", "".join(s + "\n" for s in mix))
    shutil.copy(source / "heldout.jsonl", out / "heldout.jsonl")
    (out / "corpus.json").write_text(json.dumps({**stats, "from": str(source)}, indent=2) + "\n", encoding="utf-8")
    return stats

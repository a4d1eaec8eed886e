"""Descriptions people wrote of words: the feature norms of Buchanan, Valentine and Maxwell (2019), training
data in people's words for the reverse dictionary (issue 53).

    "elephant": "a large animal big ears long trunk usually gray eats peanuts"
    "happy":    "in a good mood joy not depressed"

The file is `word<TAB>response` (173,138 rows, 3,722 words), at ../shared/data/feature-norms on development
machines and in CI, or built from the authors' public repository by `bash scripts/fetch_feature_norms.sh`
(GPL-3.0: the license and citation travel with what is trained on it; NORMS_SOURCE says so in a manifest).

About 8 % of the responses name their own word ("elephant: is gray ..."): `mask_word` takes every form
and spelling of it out, so that a model learns to find the word from what is said of it. The words are
split by a seed (`split_norm_words`): a held-out share is never trained on in any form and measures words
the model never saw described by people.
"""
from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..atomic import save_text_atomically
from ..paths import FEATURE_NORMS
from .spelling import spellings

NORMS_SOURCE = {
    "name": "English semantic feature production norms (raw responses)",
    "citation": "Buchanan, E. M., Valentine, K. D., & Maxwell, N. P. (2019). English semantic feature production "
                "norms: An extended database of 4436 concepts. Behavior Research Methods, 51, 1849-1863.",
    "repository": "doomlab/Word-Norms-2, folder '1.5 raw words no wiki/_fixed', commit ad7a771",
    "license": "GPL-3.0",
    "license_file": "core/data/FEATURE_NORMS_LICENSE",
}
HELD_OUT_SHARE = 0.1  # of the words: never trained on, measured (python -m core eval-reverse, "norms-heldout")
MIN_WORDS = 1  # a response left with fewer words once its own word is masked is dropped
_TOKEN = re.compile(r"[A-Za-z0-9']+(?:-[A-Za-z0-9']+)*")


@dataclass(frozen=True)
class Description:
    """One person's description of `word` (its own word masked)."""
    word: str
    text: str


def read_norms(path: Path = FEATURE_NORMS) -> list[Description]:
    """Every response of the norms file with its own word masked (`mask_word`), those left empty dropped;
    FileNotFoundError (saying where the file comes from) when it is not there."""
    path = Path(path)
    if missing_norms(path):
        raise FileNotFoundError(missing_norms(path))
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:  # a header line: word<TAB>response
        word, _, response = line.partition("\t")
        word = norm_word(word)
        text = mask_word(response, word)
        if word and len(text.split()) >= MIN_WORDS:
            out.append(Description(word, text))
    return out


def missing_norms(path: Path = FEATURE_NORMS) -> str | None:
    """What to do when the norms file is not at `path` (None when it is)."""
    if Path(path).is_file():
        return None
    return (f"{path} is missing: the feature norms are in ../shared/data beside the repository on development "
            "machines, or built by `bash scripts/fetch_feature_norms.sh`")


def build_norms_file(folder: Path, out: Path) -> int:
    """The norms file (`word<TAB>response`, a header line, sorted by word) from the authors' folder of one
    file a word, one participant's answer a line ('1.5 raw words no wiki/_fixed'): blank and repeated lines
    of a word dropped, whitespace collapsed, a file that is not UTF-8 read as Latin-1, a name's " R" suffix
    dropped. Returns the rows written."""
    rows = []
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        word = path.stem.removesuffix(" R")
        answers = dict.fromkeys(" ".join(line.split()) for line in text.splitlines())
        rows += [f"{word}\t{answer}" for answer in answers if answer]
    if not rows:
        raise ValueError(f"{folder} holds no responses: expected one text file a word")
    save_text_atomically(out, "word\tresponse\n" + "\n".join(sorted(rows, key=lambda r: r.split("\t", 1)[0])) + "\n")
    return len(rows)


def norm_word(name: str) -> str:
    """The word a norms entry names: lowercase, without the repository's "word_" prefix (its file for "con"
    is word_con, a name Windows reserves)."""
    name = name.strip().lower()
    return name.removeprefix("word_")


@functools.lru_cache(maxsize=8192)
def word_forms(word: str) -> frozenset[str]:
    """What counts as `word` itself in a description: its spellings, and their plural, -ed, -ing, -er and
    -ly forms (doubled final consonant and e or y dropped included: run, running; dance, dancing; happy,
    happily)."""
    forms = set()
    for spelling in spellings(word):
        stems = {spelling, spelling + spelling[-1]}
        if spelling.endswith(("e", "y")):
            stems |= {spelling[:-1], spelling[:-1] + "i"}
        forms |= {stem + ending for stem in stems for ending in ("", "s", "es", "ed", "ing", "er", "ers", "ly", "'s")}
        forms.add(spelling)
    return frozenset(forms)


def mask_word(text: str, word: str) -> str:
    """`text` without the tokens that are `word` itself (`word_forms`), the rest as written (whitespace
    collapsed, the punctuation a removed token leaves at either end stripped)."""
    forms = word_forms(word)

    def masked(match: re.Match) -> str:
        token = match.group(0).lower()
        return "" if token in forms or token.strip("'") in forms else match.group(0)
    return " ".join(_TOKEN.sub(masked, text).split()).strip(" ,.;:!?-")


@dataclass(frozen=True)
class NormsSplit:
    """The norms' words in two: `train` (trained on) and `held_out` (never trained on, measured)."""
    train: frozenset[str]
    held_out: frozenset[str]

    def of(self, descriptions: Iterable[Description], part: str) -> list[Description]:
        """The descriptions whose word is in `part` ("train" or "held_out")."""
        words = getattr(self, part)
        return [d for d in descriptions if d.word in words]


def split_norm_words(words: Iterable[str], seed: int = 0, share: float = HELD_OUT_SHARE,
                     not_trained: Iterable[str] = ()) -> NormsSplit:
    """A seeded `share` of the distinct `words` held out (depends only on the set of words and the seed);
    `not_trained` words (a dictionary split's dev and test words, so that its guards stay leak-free) are
    kept out of training too, but are not part of the measured held-out share."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"the held-out share must be between 0 and 1, not {share}")
    shuffled = sorted(set(words))
    random.Random(seed).shuffle(shuffled)
    held_out = frozenset(shuffled[:max(1, round(share * len(shuffled)))])
    return NormsSplit(frozenset(shuffled) - held_out - set(not_trained), held_out)

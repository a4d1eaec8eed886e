"""Restore capitals in decoded text: the decoder writes the uncased encoder's pieces ("obama visited
the u.s. in 2013"), a reader expects "Obama visited the U.S. in 2013".

The rule is learned from the cased training corpus: each word takes the form it most often has
where case is not forced (anywhere but a sentence's first word), and the sentence starts with a
capital. Words seen mostly in lower case (or never seen) stay as they are.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

# A word: letters or digits, with inner periods, apostrophes, ampersands or hyphens ("u.s", "o'neill").
WORD = re.compile(r"\w(?:[\w.'&-]*\w)?")


@dataclass(frozen=True)
class TrueCaser:
    """`forms`: lower-case word -> its usual cased form (only words not usually lower case)."""
    forms: dict[str, str]

    @classmethod
    def learn(cls, sentences: Iterable[str], min_count: int = 2) -> "TrueCaser":
        """Count each word's forms outside sentence-initial position; keep the words whose most
        frequent form, seen at least `min_count` times, is not all lower case."""
        counts: dict[str, Counter] = defaultdict(Counter)
        for sentence in sentences:
            for match in list(WORD.finditer(sentence))[1:]:
                word = match.group()
                counts[word.lower()][word] += 1
        forms = {}
        for key, seen in counts.items():
            form, n = seen.most_common(1)[0]
            if n >= min_count and form != key:
                forms[key] = form
        return cls(forms)

    def apply(self, text: str) -> str:
        """`text` with each known word in its usual form and a capital first letter (when it
        starts with a letter, not a number)."""
        cased = WORD.sub(lambda m: self.forms.get(m.group().lower(), m.group()), text)
        first = re.search(r"\w", cased)
        if first is None or not first.group().isalpha():
            return cased
        i = first.start()
        return cased[:i] + cased[i].upper() + cased[i + 1:]

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(dict(sorted(self.forms.items())), ensure_ascii=False) + "\n",
                              encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "TrueCaser":
        forms = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(forms, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  and v.lower() == k for k, v in forms.items()):
            raise ValueError(f"{path} is not a truecasing table (lower-case word -> cased form)")
        return cls(forms)

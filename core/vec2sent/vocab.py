"""The decoder's output vocabulary: the encoder's WordPiece tokens that occur in the corpus.

Why WordPiece rather than words: every sentence is representable (no [UNK] for rare words or
names), the vocabulary stays small (about 20k pieces instead of 50k+ words, so the softmax and the
embedding fit the size budget), and the mapping to the encoder's token ids lets the app tokenise
and detokenise exactly as the encoder does.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from core.text import detokenize

SPECIALS = ("[PAD]", "[BOS]", "[EOS]", "[UNK]")
PAD, BOS, EOS, UNK = range(len(SPECIALS))
NO_ENCODER_ID = -1  # [BOS]/[EOS] have no counterpart in the encoder's vocabulary

# BERT splits "don't" into `don ' t` and "well-known" into `well - known`; glue them back.
_CLITIC = re.compile(r"(\w) ' (s|t|re|ve|ll|d|m)\b")
_HYPHEN = re.compile(r"(\w) - (?=\w)")


@dataclass(frozen=True)
class PieceVocab:
    """Compact ids 0..n-1: the four specials, then pieces in encoder-id order.

    `pieces[i]` is the WordPiece string of compact id i and `encoder_ids[i]` its id in the encoder's
    tokenizer (NO_ENCODER_ID for specials).
    """
    pieces: tuple[str, ...]
    encoder_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compact", {e: i for i, e in enumerate(self.encoder_ids) if e >= 0})

    def __len__(self) -> int:
        return len(self.pieces)

    @classmethod
    def from_token_ids(cls, sequences: Iterable[Sequence[int]], id_to_token) -> "PieceVocab":
        """The vocabulary of every encoder id in `sequences`; `id_to_token(ids) -> list[str]`."""
        used = sorted(Counter(i for ids in sequences for i in ids))
        return cls(pieces=(*SPECIALS, *id_to_token(used)),
                   encoder_ids=(*[NO_ENCODER_ID] * len(SPECIALS), *used))

    def to_compact(self, encoder_ids: Sequence[int]) -> list[int]:
        """Map encoder token ids to compact ids; pieces outside the vocabulary become [UNK]."""
        return [self._compact.get(i, UNK) for i in encoder_ids]

    def to_text(self, ids: Iterable[int]) -> str:
        """Detokenise compact ids up to the first [EOS], skipping [PAD] and [BOS]."""
        words: list[str] = []
        for i in ids:
            if i == EOS:
                break
            if i in (PAD, BOS):
                continue
            piece = self.pieces[i]
            if piece.startswith("##") and words:
                words[-1] += piece[2:]
            else:
                words.append(piece)
        return words_to_text(words)

    def to_json(self) -> dict:
        return {"specials": list(SPECIALS), "pieces": list(self.pieces), "encoder_ids": list(self.encoder_ids)}

    @classmethod
    def from_json(cls, data: dict) -> "PieceVocab":
        if tuple(data["specials"]) != SPECIALS:
            raise ValueError(f"vocabulary specials {data['specials']} differ from {list(SPECIALS)}")
        if len(data["pieces"]) != len(data["encoder_ids"]):
            raise ValueError("vocabulary pieces and encoder_ids differ in length")
        return cls(tuple(data["pieces"]), tuple(data["encoder_ids"]))


def words_to_text(words: list[str]) -> str:
    """Whole words and punctuation as English text: clitics and hyphens glued back, then spacing."""
    text = _HYPHEN.sub(r"\1-", _CLITIC.sub(r"\1'\2", " ".join(words)))
    return detokenize(text.split())

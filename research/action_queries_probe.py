"""Issue 60, item 1 (open): do people's descriptions of actions ("to ...", "when you ...") rank better when
rewritten into the shape of a dictionary's verb gloss before they are encoded?

    python -m research.action_queries_probe      # needs the exact vectors in the user cache

Prints acc@1/3/10/100, MRR and median rank of the human dev set's action descriptions as written, with
their opening stripped ("to cut through..." -> "cut through...", "when you take..." -> "take...", "the act
of hitting..." -> "hitting...") and with "to " put first, then each description's rank in each variant.
"""
from __future__ import annotations

import re

import torch

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.evaluation.reverse import Query, ranks, read_human_descriptions, summary
from core.lexicon.forms import describes_action
from core.paths import HUMAN_DESCRIPTIONS, user_cache_dir

OPENINGS = [(r"^\s*(the |an )?act of (\w+ing)\b", r"\2"),
            (r"^\s*to\s+", ""),
            (r"^\s*(when|if)\s+(you|one|someone|somebody|we|people|a person|he|she|they)\s+", ""),
            (r"^\s*(when|if)\s+", "")]


def stripped(text: str) -> str:
    """The description without its action opening (the first rule that applies)."""
    for pattern, replacement in OPENINGS:
        new = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
        if new != text:
            return new
    return text


VARIANTS = {"as written": lambda t: t,
            "opening stripped": stripped,
            "'to' first": lambda t: t if re.match(r"^\s*to\b", t, re.IGNORECASE) else "to " + stripped(t)}


def main() -> None:
    torch.set_num_threads(1)
    engine = Engine.load(DEFAULT_CHECKPOINT, decoder=None, open_vocabulary=False)
    engine.words.set_precision("float32")
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    actions = [q for q in read_human_descriptions(HUMAN_DESCRIPTIONS) if describes_action(q.text)]
    found = {}
    for name, rewrite in VARIANTS.items():
        found[name] = ranks(engine, [Query(rewrite(q.text), q.word) for q in actions], "none")
        print(f"{name}: {summary(found[name])}")
    for i, q in enumerate(actions):
        print(" ".join(f"{found[name][i]:5d}" for name in VARIANTS), f"{q.word:14s} {q.text}")


if __name__ == "__main__":
    main()

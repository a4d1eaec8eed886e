"""Does a small causal LM, asked zero-shot, reorder the reverse dictionary's first answers better (issue 60, item 1)?

    python -m research.lm_rerank_probe --k 30 --betas 0 0.25 0.5 1 2 [--model PATH]

For each human dev description (../shared/data/human-descriptions, dev only) the app's ranking gives its first `k`
words; the language model (default the packaged SmolLM2-135M-Instruct) scores each candidate w as the
log-probability of the prompt with w filled in ('The word for "DESCRIPTION" is "w"'); a candidate's new score is
log p_encoder(w) + beta * log p_lm(text with w). Prints acc@1 / acc@10 of the whole set and of the actions slice
(descriptions opening "to", "when", "if", "the act of") for each beta; beta 0 is the app's order.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

PROMPT = 'The word for "{description}" is "{word}"'


def lm_scores(lm, description: str, words: list[str]) -> np.ndarray:
    """(k,) the LM's log-probability (nats) of the prompt with each word filled in; the prompt's shared part
    costs every candidate alike."""
    return lm.log_probs([PROMPT.format(description=description.strip().rstrip("."), word=w) for w in words])


def accuracy(ranked: list[list[str]], gold: list[str], at: int) -> float:
    return float(np.mean([g in r[:at] for r, g in zip(ranked, gold)]))


def table_row(label: str, ranked: list[list[str]], gold: list[str], actions: list[int]) -> str:
    """A markdown row: `label`, then acc@1 and acc@10 of the whole set and of the `actions` slice."""
    slice_ranked, slice_gold = [ranked[i] for i in actions], [gold[i] for i in actions]
    return (f"| {label} | {accuracy(ranked, gold, 1):.3f} | {accuracy(ranked, gold, 10):.3f} | "
            f"{accuracy(slice_ranked, slice_gold, 1):.3f} | {accuracy(slice_ranked, slice_gold, 10):.3f} |")


def main(argv: list[str] | None = None) -> int:
    from core import Engine
    from core.evaluation.reverse import read_human_descriptions
    from core.lexicon.forms import describes_action
    from core.paths import user_cache_dir
    from core.vec2sent.fluency import FluencyModel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=30, help="first answers re-scored (1-100)")
    parser.add_argument("--betas", type=float, nargs="+", default=[0, 0.25, 0.5, 1, 2])
    parser.add_argument("--model", default=None, help="a causal LM folder or .gguf (default: the packaged SmolLM2)")
    args = parser.parse_args(argv)
    if not 1 <= args.k <= 100:
        parser.error("--k from 1 to 100")
    queries = read_human_descriptions()
    engine = Engine.load(decoder=None)
    lm = FluencyModel.load(args.model, cache_dir=user_cache_dir("fluency"))
    answers = engine.predict_words_batch([q.text for q in queries], k=args.k)
    started = time.perf_counter()
    lists = []
    for q, ranked in zip(queries, answers):
        words = [w for w, _ in ranked]
        encoder = np.log(np.maximum([p for _, p in ranked], 1e-30))
        lists.append((words, encoder, lm_scores(lm, q.text, words)))
    seconds = (time.perf_counter() - started) / len(queries)
    gold = [q.word for q in queries]
    actions = [i for i, q in enumerate(queries) if describes_action(q.text)]
    print(f"{len(queries)} descriptions ({len(actions)} actions), first {args.k} answers, "
          f"{seconds * 1000:.0f} ms a description for the LM\n")
    print("| beta | all acc@1 | all acc@10 | actions acc@1 | actions acc@10 |\n|---:|---:|---:|---:|---:|")
    for beta in args.betas:
        ranked = [[words[i] for i in np.argsort(-(encoder + beta * lm), kind="stable")] for words, encoder, lm in lists]
        print(table_row(f"{beta:g}", ranked, gold, actions))
    return 0


if __name__ == "__main__":
    sys.exit(main())

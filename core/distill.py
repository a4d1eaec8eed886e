"""Distillation from a larger sentence encoder (the teacher) into ours (the student).

The student learns to give, through a linear map trained with it, the direction of the teacher's
embedding of each sentence: afterwards what the teacher's embedding says about a sentence can be
read linearly off ours, which is how SentEval's classifiers and the word head read an embedding.
Teacher vectors are computed once per sentence set and cached.

    python -m core.distill --teacher data/cache/all-mpnet-base-v2 --corpus data/cache/corpus-nlp
"""
from __future__ import annotations

import argparse
import hashlib
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from .vec2sent.text import match_key, normalize


def distillation_sentences(corpus: Path, held_out: Iterable[str], limit: int = 0, seed: int = 0) -> list[str]:
    """Sentences of a decoder corpus folder's train.txt, without any whose match key is that of a
    `held_out` text (the dev and test definitions: the student must not see them); `limit` > 0 keeps
    that many, sampled with `seed`, in file order."""
    excluded = {match_key(normalize(text)) for text in held_out}
    lines = (corpus / "train.txt").read_text(encoding="utf-8").splitlines()
    kept = [s for s in lines if s.strip() and match_key(s) not in excluded]
    if 0 < limit < len(kept):
        chosen = sorted(random.Random(seed).sample(range(len(kept)), limit))
        kept = [kept[i] for i in chosen]
    return kept


def teacher_vectors(teacher: str | Path, sentences: Sequence[str], cache: Path,
                    batch_size: int = 64, show_progress: bool = True) -> np.ndarray:
    """Unit-length teacher embeddings (n, D), mean pooling, bfloat16 where native; row i for
    sentences[i]. Cached in `cache` under a hash of the teacher's path and the sentences."""
    from .encoder import SentenceEncoder

    digest = hashlib.sha256("\n".join([str(Path(teacher).resolve()), *sentences]).encode()).hexdigest()[:16]
    target = cache / f"{Path(teacher).name}-{len(sentences)}-{digest}.npy"
    if target.is_file():
        return np.load(target)
    encoder, _ = SentenceEncoder.from_pretrained(teacher, pooling="mean")
    encoder.set_precision("auto")
    bar = _progress_bar(len(sentences), f"teacher {Path(teacher).name}") if show_progress else None
    vectors = encoder.encode(sentences, batch_size=batch_size, normalize=True,
                             progress=(lambda done, total: bar.update(done - bar.n)) if bar else None)
    if bar:
        bar.close()
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial.npy")
    np.save(partial, vectors)
    partial.replace(target)  # atomic: a killed run leaves no truncated cache file
    return vectors


def _progress_bar(total: int, desc: str):
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="sent", dynamic_ncols=True)


@dataclass
class Distillation:
    """Sentences and their teacher vectors (n, D), row i for sentences[i]; `teacher` names it."""
    sentences: list[str]
    vectors: np.ndarray
    teacher: str = ""

    def describe(self) -> dict:
        return {"teacher": self.teacher, "sentences": len(self.sentences), "dim": int(self.vectors.shape[1])}


class TeacherMap(nn.Module):
    """A linear map from student vectors (B, d) to the teacher's space (B, D), trained with the
    student; `loss` is the mean of 1 - cos(map(u), t). Started at the least-squares fit so the first
    steps do not push the encoder towards a random map (ridge regression, bias unpenalised)."""

    def __init__(self, student: np.ndarray, teacher: np.ndarray, ridge: float = 1e-2):
        super().__init__()
        mean = student.mean(0)
        x = torch.from_numpy(student - mean).double()  # (n, d), centred: the bias is fitted apart
        gram = x.T @ x  # (d, d)
        # ridge: pooled vectors of a (tiny or untrained) model can be nearly collinear, and an exact fit
        # would then swing at the slightest move of the encoder
        gram += ridge * gram.diagonal().mean() * torch.eye(len(gram), dtype=gram.dtype)
        weight = torch.linalg.solve(gram, x.T @ torch.from_numpy(teacher).double())  # (d, D)
        self.linear = nn.Linear(student.shape[1], teacher.shape[1])
        with torch.no_grad():
            self.linear.weight.copy_(weight.T)
            self.linear.bias.copy_(torch.from_numpy(teacher.mean(0) - mean @ weight.numpy()))

    def loss(self, u: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return (1 - nn.functional.cosine_similarity(self.linear(u.float()), t, dim=-1)).mean()


class TeacherObjective:
    """The teacher's loss during training: a `TeacherMap` fitted on `fit_size` of the sentences,
    batches drawn from all but `dev_size` held-out ones, on which `dev_loss` measures progress."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], distill: Distillation, seed: int = 0,
                 dev_size: int = 1000, fit_size: int = 4000):
        self.distill = distill
        order = np.random.default_rng(seed).permutation(len(distill.sentences))
        n_dev = min(dev_size, len(order) // 10)
        self.dev, self.train = order[:n_dev], order[n_dev:]
        fit = self.train[:fit_size]
        self.map = TeacherMap(encode(self._texts(fit)), distill.vectors[fit])
        self._rng = np.random.default_rng(seed + 1)

    def _texts(self, idx: np.ndarray) -> list[str]:
        return [self.distill.sentences[i] for i in idx]

    def next_batch(self, size: int) -> tuple[list[str], torch.Tensor]:
        """`size` training sentences drawn at random, with their teacher vectors (size, D)."""
        idx = self._rng.choice(self.train, size=min(size, len(self.train)), replace=False)
        return self._texts(idx), torch.from_numpy(self.distill.vectors[idx])

    def loss(self, u: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.map.loss(u, targets)

    @torch.no_grad()
    def dev_loss(self, encode: Callable[[list[str]], np.ndarray]) -> float:
        if not len(self.dev):
            return float("nan")
        return self.map.loss(torch.from_numpy(encode(self._texts(self.dev))),
                             torch.from_numpy(self.distill.vectors[self.dev])).item()


def main(argv: Sequence[str] | None = None) -> int:
    from .dictionary import load_wordnet, split_by_word

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--teacher", required=True, help="a Hugging Face sentence-encoder folder")
    p.add_argument("--corpus", type=Path, required=True, help="a decoder corpus folder (python -m core.vec2sent.corpus)")
    p.add_argument("--limit", type=int, default=64000, help="sentences to sample (0: all; core.train's --distill-sentences)")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    split = split_by_word(load_wordnet())
    held_out = [e.definition for e in (*split.dev, *split.test)]
    sentences = distillation_sentences(args.corpus, held_out, args.limit)
    print(f"{len(sentences)} sentences")
    vectors = teacher_vectors(args.teacher, sentences, args.corpus / "teacher-vectors")
    print(f"teacher vectors {vectors.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

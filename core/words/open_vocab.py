"""Open-vocabulary reverse dictionary: every WordNet lemma (147k words and phrases) can be the answer.

The frozen word head scores only words that are one vocabulary token (21.7k for MiniLM). Each
candidate c gets a score from two channels, computed for a sentence vector u:

    word(c)       = cos(u, tower(c))                              its own embedding by the word tower
                                                                  (core/words/word_tower.py); older checkpoints:
                                                                  cos(u, map(encode(c))), a linear map
    head(c)       = WordScorer.logits(u)[token of c]             if c is one token (head + word vector)
                  = multi_bias / head_weight                      otherwise (stands in for the logit)
    definition(c) = max over c's definitions d of cos(u, encode(d))   (nearest glosses vote)
                  = word(c)                                       if c has none (held out in evaluation)
    score(c)      = word_scale * word(c) + head_weight * head(c) + definition_weight * definition(c)

That is the dictionary expert: it reads a description as a gloss, and finds the word whose definitions
say the same thing. People do not write glosses, and mean a common word far more often than a rare one
("bird", not "ovenbird"), so the answer is a mixture with an everyday expert (issue 38): the same
channels weighted otherwise, plus a prior on how common the word is (core/words/word_prior.py):

    everyday(c)   = everyday_word_scale * word(c) + everyday_head_weight * head(c)
                    + everyday_definition_weight * definition(c) + frequency_weight * zipf(c)
                    + phrase_bias [c has a space or hyphen]  (everyday_multi_bias stands in for head(c))
    p(c)          = (1 - share) softmax(score / T)(c) + share softmax(everyday / T)(c)

with share = everyday_share and T = mixture_temperature (0: the dictionary expert alone, its ranking
as before issue 38). `OpenScorer.scores` returns log p(c) when the share is above 0, else score(c).
The everyday weights were chosen on people's descriptions (research/human_fusion_probe.py at 666302e,
then the mixture; docs/results.md) and are the defaults of every model (`DEFAULT_OPEN_VOCAB`, which a
checkpoint's own weights override).

The weights are chosen on dev (docs/results.md, "Open vocabulary"). For evaluation the definition
index must never hold the text being evaluated: `OpenScorer.without_definitions` drops those.
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from ..atomic import atomic_file
from ..lexicon.dictionary import Entry, definition_key
from ..runtime.hardware import RowwiseInt8Product
from .product_quantizer import decode, fit_codes
from .vocabulary import WordVocabulary
from .word_eval import metrics_from_ranks, rank_of_gold
from .word_prior import zipf_frequencies

Encode = Callable[[list[str]], np.ndarray]  # texts -> (n, d) float32


class Rescorer(Protocol):
    """What scores a query's first candidates again with better vectors (core/words/exact_rescoring.py)."""

    def rescore(self, scorer: "OpenScorer", experts: tuple[torch.Tensor, torch.Tensor | None], u: torch.Tensor,
                token_logits: torch.Tensor, everyday: tuple[torch.Tensor, torch.Tensor] | None,
                allowed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`scorer.experts(...)` (B, C) each, with the columns of each query's first candidates (among those
        `allowed`, (B, C) bool; default all) replaced."""


@dataclass(frozen=True)
class OpenVocabConfig:
    word_scale: float = 15.0        # weight of cos(u, tower(c)), every candidate
    head_weight: float = 1.0        # weight of the engine's word score, single-token candidates
    multi_bias: float = 0.0         # added instead for the others (they have no head logit)
    definition_weight: float = 0.0  # weight of the definition channel
    temperature: float = 1.0        # the shown probabilities are softmax(score / temperature) when the
                                    # dictionary expert answers alone: chosen on dev for calibration
                                    # (the ranking does not depend on it; the mixture uses its own)
    # The everyday expert (module docstring), chosen on people's descriptions (docs/results.md, issue 38):
    everyday_share: float = 0.0     # its share of the answer; 0: the dictionary expert alone
    mixture_temperature: float = 1.0  # T of both experts inside the mixture
    everyday_word_scale: float = 0.0
    everyday_head_weight: float = 0.0
    everyday_multi_bias: float = 0.0
    everyday_definition_weight: float = 0.0
    frequency_weight: float = 0.0   # weight of the word prior, zipf(c)
    phrase_bias: float = 0.0        # added for phrases and hyphenated words ("ice cream", "well-known")

    def __post_init__(self) -> None:
        if not 0.0 <= self.everyday_share < 1.0:
            raise ValueError(f"everyday_share must be in [0, 1), not {self.everyday_share}")
        if self.everyday_share and self.mixture_temperature <= 0:
            raise ValueError(f"mixture_temperature must be above 0, not {self.mixture_temperature}")


# The everyday expert as chosen on the human dev set (docs/results.md, "The reverse dictionary for what people type")
EVERYDAY = {"everyday_share": 0.85, "mixture_temperature": 64.0, "everyday_word_scale": 160.0,
            "everyday_head_weight": 6.0, "everyday_multi_bias": -16.0, "everyday_definition_weight": 160.0,
            "frequency_weight": 16.0, "phrase_bias": 4.0}
DEFAULT_OPEN_VOCAB = OpenVocabConfig(multi_bias=0.0, definition_weight=0.0, **EVERYDAY)  # chosen on dev: docs/results.md
OPEN_VOCAB_MAP = "open_vocab_map.safetensors"  # older checkpoints: the linear map
# A checkpoint's own open-vocabulary vectors, product-quantized (`OpenScorer.save_compact`): small enough for
# the repository (8.4 MB for WordNet), so a fresh clone answers with every word in seconds, not minutes.
COMPACT_VECTORS = "open_vocab_codes.safetensors"
# What the app and the CLI say while a model answers from approximate vectors (`OpenVocabulary.approximate`)
APPROXIMATE_ANSWERS = ("the reverse dictionary answers from approximate vectors (each query's first candidates scored "
                       "again with exact ones) until this model's own exact vectors are embedded")
COMPACT_SUBSPACES = 32  # bytes a vector: the ranking within noise of int8's 384 (docs/results.md, "First launch")


class Candidates:
    """The candidate answers: words and phrases with their parts of speech and definitions.

    words[i] is lowercase ("ice cream"); token_ids[i] is its vocabulary token id when it is one
    whole-word token of the head, else -1. definitions[g] are the distinct definition texts,
    definition_pos[g] the part-of-speech tag of the first entry giving it ("" if none), and
    (pair_definition[p], pair_word[p]) says that definition g defines word i. zipf[i] is the word's
    prior (core/words/word_prior.py), at least USER_WORD_ZIPF for the `user_words`.
    """

    def __init__(self, entries: Iterable[Entry], vocab: WordVocabulary, user_words: Iterable[str] = ()):
        by_word: dict[str, list[Entry]] = {}
        for entry in entries:
            by_word.setdefault(entry.word, []).append(entry)
        self.words = sorted(by_word)
        self.token_ids = np.array([_token_id(vocab, w) for w in self.words], dtype=np.int64)  # (C,)
        pos_of = {w: {e.pos for e in by_word[w] if e.pos} for w in self.words}
        self.filters = WordVocabulary.of_words(self.words, pos_of)
        self.definitions: list[str] = []
        self.definition_pos: list[str] = []
        index: dict[str, int] = {}
        pairs = []
        for i, word in enumerate(self.words):
            for entry in by_word[word]:
                g = index.setdefault(definition_key(entry.definition), len(self.definitions))
                if g == len(self.definitions):
                    self.definitions.append(entry.definition)
                    self.definition_pos.append(entry.pos or "")
                pairs.append((g, i))
        self.pair_definition, self.pair_word = (np.array(col, dtype=np.int64) for col in zip(*pairs))
        self.zipf = zipf_frequencies(self.words, user_words)  # (C,)

    def __len__(self) -> int:
        return len(self.words)

    def subset(self, rows: np.ndarray) -> "Candidates":
        """The candidates `rows` (sorted, distinct) with their definitions, for scoring only (no filters):
        training the query adapter against the words people mean most, not all 147k (core/words/adapter_fit.py)."""
        other = object.__new__(Candidates)
        new_row = np.full(len(self.words), -1)
        new_row[rows] = np.arange(len(rows))
        keep = new_row[self.pair_word] >= 0  # (P,) the pairs of kept words
        definitions, new_definition = np.unique(self.pair_definition[keep], return_inverse=True)
        other.words = [self.words[i] for i in rows.tolist()]
        other.token_ids, other.zipf = self.token_ids[rows], self.zipf[rows]
        other.definitions = [self.definitions[g] for g in definitions.tolist()]
        other.pair_definition, other.pair_word = new_definition.reshape(-1), new_row[self.pair_word[keep]]
        other.kept_definitions = definitions  # (G',) rows of this subset's definitions among `self.definitions`
        return other

    def with_definitions(self, keep: np.ndarray) -> "Candidates":
        """A `subset`'s candidates with only the definitions `keep` (G',) bool marks (each word keeping at least
        one), for scoring only; `kept_definitions` still says their rows among the full candidates'."""
        other = object.__new__(Candidates)
        other.__dict__.update({k: v for k, v in self.__dict__.items() if k in ("words", "token_ids", "zipf")})
        pairs = keep[self.pair_definition]  # (P,)
        rows, new_definition = np.unique(self.pair_definition[pairs], return_inverse=True)
        other.definitions = [self.definitions[g] for g in rows.tolist()]
        other.pair_definition, other.pair_word = new_definition.reshape(-1), self.pair_word[pairs]
        other.kept_definitions = self.kept_definitions[rows]
        return other

    @functools.cached_property
    def defined_rows(self) -> list[list[int]]:
        """defined_rows[g]: the rows of the words definition g defines, alphabetically (the pairs go word by word)."""
        rows: list[list[int]] = [[] for _ in self.definitions]
        for g, i in zip(self.pair_definition.tolist(), self.pair_word.tolist()):
            rows[g].append(i)
        return rows

    @functools.cached_property
    def first_definitions(self) -> list[str]:
        """first_definitions[i]: the definition of words[i]'s first entry, in the dictionary's order."""
        # every word has a pair (it comes from an entry), and its pairs follow its entries' order
        _, first_pair = np.unique(self.pair_word, return_index=True)  # (C,)
        return [self.definitions[g] for g in self.pair_definition[first_pair].tolist()]

    @functools.cached_property
    def definition_rows(self) -> dict[str, int]:
        """{definition_key(text): its row g in `definitions`}."""
        return {definition_key(text): g for g, text in enumerate(self.definitions)}

    @property
    def single_token(self) -> np.ndarray:
        """Boolean (C,): True where the head can score the candidate."""
        return self.token_ids >= 0

    def fingerprint(self) -> str:
        """Identifies the words and definitions (a cache key for their vectors); computed once."""
        if not hasattr(self, "_fingerprint"):
            digest = hashlib.sha256("\n".join(self.words).encode())
            digest.update("\n".join(self.definitions).encode())
            self._fingerprint = digest.hexdigest()[:16]
        return self._fingerprint


def _token_id(vocab: WordVocabulary, word: str) -> int:
    token = vocab.token_id(word)
    return -1 if token is None or not vocab.candidate_mask[token] else token


class OpenScorer:
    """Scores (B, C) of sentence vectors against every candidate (see the module docstring)."""

    def __init__(self, candidates: Candidates, word_vectors: torch.Tensor, definition_vectors: torch.Tensor,
                 config: OpenVocabConfig = OpenVocabConfig(), word_map: torch.nn.Module | None = None,
                 own: bool = False):
        """`own`: the vectors are this scorer's alone (just read), so they are scaled to unit length in place
        rather than copied (264k rows: hundreds of MB not allocated again at a cold start)."""
        self.candidates = candidates
        self.multi = torch.from_numpy(np.flatnonzero(~candidates.single_token))  # (M,) no token
        self.single = torch.from_numpy(np.flatnonzero(candidates.single_token))  # (S,)
        self.single_tokens = torch.from_numpy(candidates.token_ids[candidates.single_token])  # (S,)
        self.word_vectors = _unit(word_vectors, in_place=own)  # (C, d), row i for candidates.words[i]
        self.definition_vectors = _unit(definition_vectors, in_place=own)  # (G, d)
        self.config = config
        self.word_map = word_map
        self.rescorer: Rescorer | None = None  # scores the first candidates again (approximate vectors)
        self.prior = torch.from_numpy(candidates.zipf)  # (C,)
        self.phrase = torch.tensor([" " in w or "-" in w for w in candidates.words], dtype=torch.float32)  # (C,)
        self._pairs = (torch.from_numpy(candidates.pair_definition), torch.from_numpy(candidates.pair_word))
        # (d, C) and (d, G): what a query multiplies; int8 after `quantize`. Transposed views, not copies: a
        # product reads them as they lie, and copying 264k rows took a cold command-line query ~0.5 s.
        mapped = self.word_vectors  # (C, d)
        if word_map is not None:  # an older checkpoint's map towards the definitions of such words
            with torch.no_grad():
                mapped = _unit(word_map(mapped))
        self._products = {"word": mapped.T, "definition": self.definition_vectors.T}

    def with_config(self, config: OpenVocabConfig) -> "OpenScorer":
        """The same vectors with other weights (shares the tensors)."""
        other = object.__new__(OpenScorer)
        other.__dict__.update({**self.__dict__, "config": config})
        return other

    def subset(self, rows: np.ndarray) -> "OpenScorer":
        """The scorer of `Candidates.subset(rows)` (float32 vectors: not after `quantize`)."""
        candidates = self.candidates.subset(rows)
        return OpenScorer(candidates, self.word_vectors[torch.from_numpy(rows)],
                          self.definition_vectors[torch.from_numpy(candidates.kept_definitions)], self.config,
                          self.word_map)

    def without_definitions(self, texts: Iterable[str]) -> "OpenScorer":
        """A scorer whose definition index leaves out `texts` (evaluation: never index the text
        being evaluated). Candidates left with no definition fall back on their word vector."""
        drop = {definition_key(t) for t in texts}
        keep = np.array([definition_key(d) not in drop for d in self.candidates.definitions])
        pair_keep = keep[self.candidates.pair_definition]
        new_index = np.cumsum(keep) - 1
        other = self.with_config(self.config)
        other._pairs = (torch.from_numpy(new_index[self.candidates.pair_definition[pair_keep]]),
                        torch.from_numpy(self.candidates.pair_word[pair_keep]))
        other.definition_vectors = self.definition_vectors[torch.from_numpy(keep)]
        other._products = {**self._products, "definition": other.definition_vectors.T}
        return other

    def quantize(self) -> "OpenScorer":
        """Query products in int8 (`RowwiseInt8Product`) and the float32 copies dropped: ~100 MB
        instead of ~400 MB for all of WordNet, same ranking within noise (docs/results.md)."""
        self._products = {name: RowwiseInt8Product(m) if isinstance(m, torch.Tensor) else m
                          for name, m in self._products.items()}
        self.word_vectors = self.definition_vectors = None
        return self

    @property
    def temperature(self) -> float:
        """What `scores` are divided by before the softmax that gives the shown probabilities: 1 for
        the mixture's log-probabilities."""
        return 1.0 if self.config.everyday_share > 0 else self.config.temperature

    @torch.inference_mode()
    def scores(self, u: torch.Tensor, token_logits: torch.Tensor,
               everyday: tuple[torch.Tensor, torch.Tensor] | None = None, allowed: torch.Tensor | None = None
               ) -> torch.Tensor:
        """u (B, d) and the engine's token scores (B, V) -> candidate scores (B, C): score(c), or
        log p(c) of the mixture with the everyday expert (module docstring). `everyday`: what that expert
        reads instead, (u_e (B, d), its token scores (B, V)) from the query adapter
        (core/words/query_adapter.py); default u itself. With a `rescorer` (approximate vectors: the
        checkpoint's compact ones), each query's first candidates among those `allowed` (B, C) (default: all)
        are scored again with exact vectors."""
        experts = self.experts(u, token_logits, everyday)
        if self.rescorer is not None:
            experts = self.rescorer.rescore(self, experts, u, token_logits, everyday, allowed)
        return self.combine(*experts)

    def mixture(self, u: torch.Tensor, token_logits: torch.Tensor,
                everyday: tuple[torch.Tensor, torch.Tensor] | None = None, own: torch.Tensor | None = None
                ) -> torch.Tensor:
        """`scores` with gradients (training the adapter: core/words/adapter_fit.py; float32 only). own[b]
        is the index of query b's own text among the definitions, left out of the definition channel
        (-1: it is none of them)."""
        return self.combine(*self.experts(u, token_logits, everyday, own))

    def experts(self, u: torch.Tensor, token_logits: torch.Tensor,
                everyday: tuple[torch.Tensor, torch.Tensor] | None = None, own: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(the dictionary expert's score(c) (B, C), the everyday expert's everyday(c) (B, C) or None
        without one): what `combine` mixes (arguments as `mixture`'s)."""
        c = self.config
        unit = torch.nn.functional.normalize(u.float(), dim=1)  # (B, d)
        word = self._cos(unit, "word")  # (B, C)
        head = token_logits[:, self.single_tokens]  # (B, S)
        definition = (self.definition_scores(unit, fallback=word, leave_out=own)
                      if c.definition_weight or c.everyday_share else None)
        dictionary = self._expert(word, head, definition, c.word_scale, c.head_weight, c.multi_bias, c.definition_weight)
        if c.everyday_share <= 0:
            return dictionary, None
        if everyday is not None:  # the adapter's reading of the query: its own three channels
            unit = torch.nn.functional.normalize(everyday[0].float(), dim=1)  # (B, d)
            word = self._cos(unit, "word")  # (B, C)
            head = everyday[1][:, self.single_tokens]  # (B, S)
            definition = self.definition_scores(unit, fallback=word, leave_out=own)
        everyday_scores = self._expert(word, head, definition, c.everyday_word_scale, c.everyday_head_weight,
                                       c.everyday_multi_bias, c.everyday_definition_weight)
        return dictionary, everyday_scores + c.frequency_weight * self.prior + c.phrase_bias * self.phrase

    def combine(self, dictionary: torch.Tensor, everyday_scores: torch.Tensor | None) -> torch.Tensor:
        """The answer's scores (B, C) from the two experts' (`experts`): score(c) alone without the everyday
        expert, else log p(c) of the mixture."""
        c = self.config
        if everyday_scores is None or c.everyday_share <= 0:
            return dictionary
        t = c.mixture_temperature
        return torch.logaddexp(math.log1p(-c.everyday_share) + (dictionary / t).log_softmax(-1),
                               math.log(c.everyday_share) + (everyday_scores / t).log_softmax(-1))

    def dictionary_scores(self, u: torch.Tensor, token_logits: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
        """The dictionary expert's score(c) (B, C) for training (core/train.py, own words): gradient
        flows through u (B, d) and the token scores (B, V); the vectors stay fixed (float32: not after
        `quantize`). own[b] is the index of query b's own text among the definitions, left out of the
        definition channel (-1: it is none of them)."""
        c = self.config
        unit = torch.nn.functional.normalize(u.float(), dim=1)  # (B, d)
        word = self._cos(unit, "word")  # (B, C)
        definition = self.definition_scores(unit, fallback=word, leave_out=own)
        return self._expert(word, token_logits[:, self.single_tokens], definition, c.word_scale, c.head_weight,
                            c.multi_bias, c.definition_weight)

    def _expert(self, word: torch.Tensor, head: torch.Tensor, definition: torch.Tensor | None, word_scale: float,
                head_weight: float, multi_bias: float, definition_weight: float) -> torch.Tensor:
        out = word_scale * word  # (B, C)
        out = out.index_add(1, self.single, head_weight * head)  # not in place: training differentiates it
        out[:, self.multi] += multi_bias
        if definition_weight:
            out += definition_weight * definition
        return out

    def definition_scores(self, unit: torch.Tensor, fallback: torch.Tensor | None = None,
                          leave_out: torch.Tensor | None = None) -> torch.Tensor:
        """(B, C): per candidate the highest cosine of `unit` with one of its definitions. A candidate
        with none keeps `fallback` (B, C): the cosine with its mapped word vector, which the map was
        trained to bring where its definitions would be (0 without `fallback`). leave_out[b] (B,) is a
        definition that does not vote for row b (training: the query's own text; -1: none)."""
        definitions, words = self._pairs
        cos = self._cos(unit, "definition")  # (B, G)
        if leave_out is not None:
            mine = leave_out >= 0
            cos = cos.index_put((mine.nonzero()[:, 0], leave_out[mine]), torch.tensor(float("-inf")))
        base = torch.zeros(unit.shape[0], len(self.candidates)) if fallback is None else fallback  # (B, C)
        best = base.scatter_reduce(1, words.expand(unit.shape[0], -1), cos[:, definitions], "amax", include_self=False)
        return best if leave_out is None else torch.where(torch.isinf(best), base, best)  # all left out: fallback

    def cosines(self, unit: torch.Tensor, kind: str) -> torch.Tensor:
        """unit (B, d) -> (B, N): res[b][i] = cos(unit[b], word vector i) for kind "word" (the
        candidates, as the word channel scores them), definition vector i for "definition"."""
        return self._cos(unit, kind)

    def vectors_of(self, kind: str, rows: torch.Tensor) -> torch.Tensor:
        """The unit vectors (n, d) of `rows` of kind "word" or "definition" that `cosines` multiplies."""
        product = self._products[kind]
        return product[:, rows].T if isinstance(product, torch.Tensor) else _unit(product.columns_of(rows))

    def definition_cosines(self, unit: np.ndarray, texts: Sequence[str]) -> np.ndarray | None:
        """(n,): cos(unit, stored vector of definition texts[i]) for a unit vector (d,), as the definition
        channel scores it (no encoding), or None when one of `texts` is not among the definitions."""
        rows = [self.candidates.definition_rows.get(definition_key(text), -1) for text in texts]
        if not rows or min(rows) < 0:
            return None
        return self._cos(torch.from_numpy(unit[None]), "definition")[0, rows].float().numpy()

    def _cos(self, unit: torch.Tensor, name: str) -> torch.Tensor:
        product = self._products[name]
        return unit @ product if isinstance(product, torch.Tensor) else product(unit)

    @classmethod
    def compute(cls, encode_words: Encode, encode_definitions: Encode, candidates: Candidates,
                config: OpenVocabConfig = OpenVocabConfig(), word_map: torch.nn.Module | None = None) -> "OpenScorer":
        """Embed every candidate with `encode_words` (the word tower) and every definition with
        `encode_definitions` (the encoder): minutes for all of WordNet."""
        words = torch.from_numpy(encode_words(candidates.words))
        definitions = torch.from_numpy(encode_definitions(candidates.definitions))
        return cls(candidates, words, definitions, config, word_map)

    def save(self, path: Path) -> None:
        """The vectors as int8 unit rows (the per-row scale cancels in the cosine), atomically."""
        _save_atomically({"word_vectors": int8_rows(self.word_vectors),
                          "definition_vectors": int8_rows(self.definition_vectors)}, path)

    def save_compact(self, path: Path, name: str, subspaces: int = COMPACT_SUBSPACES) -> None:
        """The vectors product-quantized, `subspaces` bytes a row (core/words/product_quantizer.py), atomically,
        marked as standing for the cache file `name` (`stored_vectors` finds them by it)."""
        tensors = {}
        for kind, vectors in (("word", self.word_vectors), ("definition", self.definition_vectors)):
            tensors[f"{kind}_codes"], tensors[f"{kind}_codebooks"] = fit_codes(vectors, subspaces)
        _save_atomically(tensors, path, metadata={"name": name})

    @classmethod
    def load(cls, path: Path, candidates: Candidates, config: OpenVocabConfig = OpenVocabConfig(),
             word_map: torch.nn.Module | None = None) -> "OpenScorer":
        """The scorer of vectors `save` or `save_compact` wrote for `candidates`."""
        tensors = load_file(str(path))
        vectors = {kind: tensors[f"{kind}_vectors"] if f"{kind}_vectors" in tensors
                   else decode(tensors[f"{kind}_codes"], tensors[f"{kind}_codebooks"])
                   for kind in ("word", "definition")}
        if vectors["word"].shape[0] != len(candidates):
            raise ValueError(f"{path} holds vectors of another candidate list")
        return cls(candidates, vectors["word"], vectors["definition"], config, word_map, own=True)


def open_scorer(encode_words: Encode, encode_definitions: Encode, candidates: Candidates, config: OpenVocabConfig,
                word_map: torch.nn.Module | None, cache: Path | None, reuse: OpenScorer | None = None) -> OpenScorer:
    """`OpenScorer.load` from `cache` if it is there, else `compute` (with `reuse`: `reusing` its
    vectors); with a `cache`, what was computed is saved there and read back, so a model answers alike
    whether its cache existed or not (the cache holds int8 rows: float32 vectors score up to 0.1
    points differently)."""
    if cache is not None and cache.exists():
        return OpenScorer.load(cache, candidates, config, word_map)
    scorer = (reusing(reuse, candidates, encode_words, encode_definitions, config, word_map) if reuse is not None
              else OpenScorer.compute(encode_words, encode_definitions, candidates, config, word_map))
    if cache is None:
        return scorer
    cache.parent.mkdir(parents=True, exist_ok=True)
    scorer.save(cache)
    return OpenScorer.load(cache, candidates, config, word_map)


def stored_vectors(name: str, folders: Iterable[Path], compact: Iterable[Path] = ()) -> Path | None:
    """The file holding the vectors of cache file `name`: `name` in the first of `folders` that has it,
    else the first of the `compact` files saved for it (`OpenScorer.save_compact`); None without one."""
    found = next((Path(folder) / name for folder in folders if (Path(folder) / name).is_file()), None)
    return found or next((path for path in compact if compact_name(path) == name), None)


def compact_name(path: Path) -> str | None:
    """The cache file name `path` (`OpenScorer.save_compact`) stands for; None if it is no such file."""
    if not Path(path).is_file():
        return None
    with safe_open(str(path), "pt") as stored:
        return (stored.metadata() or {}).get("name")


def reusing(parent: OpenScorer, candidates: Candidates, encode_words: Encode, encode_definitions: Encode,
            config: OpenVocabConfig, word_map: torch.nn.Module | None) -> OpenScorer:
    """A scorer for `candidates` holding the vectors of `parent` (another model's scorer over other
    candidates: the model a fine-tune started from) for the words and definitions it has, and the
    others embedded now: seconds for a fine-tune's few new words instead of minutes for all."""
    def vectors(keys: list[str], texts: list[str], known: dict[str, int], stored: torch.Tensor, encode: Encode
                ) -> torch.Tensor:
        rows = torch.tensor([known.get(key, -1) for key in keys], dtype=torch.long)  # (n,) -1: not in parent
        out = torch.empty(len(keys), stored.shape[1])  # (n, d)
        have = rows >= 0
        out[have] = stored[rows[have]]
        if not have.all():
            out[~have] = _unit(torch.from_numpy(encode([t for t, h in zip(texts, have.tolist()) if not h])))
        return out

    words = vectors(candidates.words, candidates.words, {w: i for i, w in enumerate(parent.candidates.words)},
                    parent.word_vectors, encode_words)
    definitions = vectors([definition_key(d) for d in candidates.definitions], candidates.definitions,
                          {definition_key(d): g for g, d in enumerate(parent.candidates.definitions)},
                          parent.definition_vectors, encode_definitions)
    return OpenScorer(candidates, words, definitions, config, word_map)


def save_word_map(word_map: torch.nn.Linear, path: Path) -> None:
    save_file({"weight": word_map.weight.detach().contiguous(), "bias": word_map.bias.detach().contiguous()},
              str(path))


def load_word_map(path: Path) -> torch.nn.Linear:
    tensors = load_file(str(path))
    word_map = torch.nn.Linear(tensors["weight"].shape[1], tensors["weight"].shape[0])
    word_map.load_state_dict(tensors)
    return word_map.requires_grad_(False)


def _unit(x: torch.Tensor, in_place: bool = False) -> torch.Tensor:
    """x's rows scaled to length 1, float32 (`torch.nn.functional.normalize`). The float32 copy of another dtype
    (int8 rows from a cache) is scaled in place, and so is a float32 x itself with `in_place`: the same numbers,
    without a second copy."""
    unit = x.float()  # x itself when it is float32
    if (in_place or unit is not x) and not unit.requires_grad:
        return unit.div_(unit.norm(2, 1, keepdim=True).clamp_min(1e-12))  # normalize's own steps
    return torch.nn.functional.normalize(unit, dim=1)


def _save_atomically(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None
                     ) -> None:
    with atomic_file(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)


def int8_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled so each one's largest entry is 127, as int8 (the scale cancels in a cosine)."""
    return (x / x.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) * 127).round().to(torch.int8).contiguous()


def evaluate_among(engine, test: Sequence[Entry], dictionary: Sequence[Entry], k: int = 3,
                   batch_size: int = 128) -> tuple[dict, list[list[str]]]:
    """Rank each test definition's word among all the words of `dictionary` (which holds the test
    entries too), with `engine`'s open-vocabulary scoring and a definition index without the test
    texts. Returns (MRR / top-1/3/10 as `core.words.word_eval.metrics_from_ranks`, the top `k` words of each
    test definition). Every word of `dictionary` is the user's, with the prior the app gives such words
    (`Candidates` user_words). Small dictionaries: everything is embedded now."""
    candidates = Candidates(dictionary, engine.words.vocab, user_words=(e.word for e in dictionary))
    words = engine.word_encoder()
    scorer = OpenScorer.compute(lambda texts: words.encode(texts, batch_size=batch_size),
                                lambda texts: engine.encode(texts, batch_size=batch_size), candidates,
                                engine.words.config, engine.words.word_map)
    scorer = scorer.without_definitions(e.definition for e in test)
    index = {w: i for i, w in enumerate(candidates.words)}
    u = torch.from_numpy(engine.encode([e.definition for e in test], batch_size=batch_size))  # (n, d)
    scores = scorer.scores(u, engine.words.logits(u))  # (n, C)
    gold = torch.tensor([index[e.word] for e in test])
    top = scores.topk(min(k, scores.shape[1])).indices.tolist()
    return metrics_from_ranks(rank_of_gold(scores, gold)), [[candidates.words[j] for j in row] for row in top]

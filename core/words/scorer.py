"""The words wing's one object: sentence vectors in, ranked words out (the reverse dictionary's score).

    scorer = WordScorer(head, vocab)          # the frozen head's single-token words
    scorer.logits(u)                          # (n, V): head + word vectors - hubness correction
    scorer.ranked(u, k=10)                    # [[("leader", 0.31), ...], ...]
    scorer.open_vocab = open_scorer(...)      # every WordNet word and phrase as an answer from now on

The engine (core/engine.py) holds one and sets its parts: it embeds what they need (word vectors,
hubness references) because embedding is the encoder's work; the open vocabulary's scorer is set by its
transitions (core/words/open_vocabulary.py: `OpenVocabulary`, which says where its vectors came from).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch

from ..lexicon import dictionary as lexicon_files
from ..lexicon.dictionary import (WORDNET_SYNSETS_PATH, Entry, load_wordnet, load_wordnet_lemmas, read_entries,
                                  write_entries)
from ..lexicon.spelling import spelling_key, spellings
from ..runtime.hardware import quantised_engine
from ..text import query_words, singular
from .hubness import HUB_PENALTY, HubPenalty
from .open_vocab import (DEFAULT_OPEN_VOCAB, OPEN_VOCAB_MAP, Candidates, OpenScorer, OpenVocabConfig,
                         load_word_map, save_word_map)
from .query_adapter import EVERYDAY_ADAPTER, QueryAdapter, load_adapter, save_adapter
from .vocabulary import WordFilter, WordVocabulary
from .word_head import WordHead
from .word_tower import WORD_TOWER, Factors, load_word_tower, save_word_tower
from .word_vectors import WORD_VECTORS, WordVectors

USER_DICTIONARY = "user_dictionary.jsonl.gz"
OPEN_VOCAB_WEIGHTS = {f.name for f in fields(OpenVocabConfig)}
INFLECTION_SLACK = 2  # ranked candidates read per requested word, so dropped inflections are replaced


class WordScorer:
    """The frozen word head and what adds to its scores: word vectors, the hubness correction and,
    once set, the open vocabulary (`open_vocab`) with its word tower, older linear map and weights,
    and a fine-tune's own dictionary (`user_dictionary`, whose words are answers too)."""

    def __init__(self, head: WordHead, vocab: WordVocabulary):
        self.head = head
        self.vocab = vocab  # the head's single-token words and their filters
        self.vectors: WordVectors | None = None  # the second reverse-dictionary score, if any
        self.hub_penalty: HubPenalty | None = None  # subtracted from the word scores, if any
        self.open_vocab: OpenScorer | None = None  # every WordNet lemma as an answer, once set
        self.tower: Factors | None = None  # the word tower's low-rank factors (core/words/word_tower.py)
        self.word_map: torch.nn.Linear | None = None  # an older checkpoint's linear map of word vectors
        self.config = DEFAULT_OPEN_VOCAB  # the open vocabulary's weights; a checkpoint's own when it has them
        self.adapter: QueryAdapter | None = None  # what the everyday expert reads a query as (query_adapter.py)
        self.adapter_training: dict = {}  # how and on what the adapter was trained (the manifest's record)
        self.user_dictionary: list[Entry] = []  # a fine-tune's dictionary: its words are answers too
        self.set_precision("auto")  # sets self.int8

    @classmethod
    def for_tokenizer(cls, head: WordHead, tokenizer, vocab_size: int) -> WordScorer:
        """A scorer of the tokenizer's whole words, with the parts of speech WordNet gives them."""
        return cls(head, WordVocabulary.from_tokenizer(tokenizer, vocab_size, _pos_of_dictionary_words))

    # ---- a checkpoint's files ------------------------------------------------------------------
    def load(self, directory: Path, manifest: dict) -> None:
        """Read the word scoring a checkpoint's `manifest` names from `directory` (the head apart)."""
        if "word_vectors" in manifest:
            self.vectors = WordVectors.load(directory / WORD_VECTORS, manifest["word_vectors"]["scale"])
        if "hub_penalty" in manifest:
            hub = manifest["hub_penalty"]
            self.hub_penalty = HubPenalty.load(directory / HUB_PENALTY, hub["k"], hub["weight"], hub["references"])
        open_vocab = manifest.get("open_vocab", {})
        self.config = replace(DEFAULT_OPEN_VOCAB, **{k: v for k, v in open_vocab.items() if k in OPEN_VOCAB_WEIGHTS})
        if "word_tower" in open_vocab:
            self.tower = load_word_tower(directory / WORD_TOWER)
        if "word_map" in open_vocab:
            self.word_map = load_word_map(directory / OPEN_VOCAB_MAP)
        if "user_dictionary" in manifest:
            self.user_dictionary = read_entries(directory / USER_DICTIONARY)
        if "everyday_adapter" in manifest:
            described = manifest["everyday_adapter"]
            self.adapter = load_adapter(directory / described["file"], described["config"])
            self.adapter_training = described.get("training", {})

    def save(self, directory: Path, manifest: dict) -> None:
        """Write the word scoring (the head apart) into `directory` and name its files in `manifest`."""
        manifest["open_vocab"] = asdict(self.config)
        if self.user_dictionary:
            write_entries(self.user_dictionary, directory / USER_DICTIONARY)
            manifest["user_dictionary"] = {"file": USER_DICTIONARY, "entries": len(self.user_dictionary)}
        if self.tower:
            save_word_tower(self.tower, directory / WORD_TOWER)
            manifest["open_vocab"]["word_tower"] = WORD_TOWER
        if self.word_map is not None:
            save_word_map(self.word_map, directory / OPEN_VOCAB_MAP)
            manifest["open_vocab"]["word_map"] = OPEN_VOCAB_MAP
        if self.adapter is not None:
            manifest["everyday_adapter"] = {"file": EVERYDAY_ADAPTER,
                                            "config": save_adapter(self.adapter, directory / EVERYDAY_ADAPTER),
                                            "training": self.adapter_training}
        if self.hub_penalty is not None:
            self.hub_penalty.save(directory / HUB_PENALTY)
            manifest["hub_penalty"] = self.hub_penalty.describe()
        if self.vectors is not None:
            self.vectors.save(directory / WORD_VECTORS)
            manifest["word_vectors"] = {"file": WORD_VECTORS, "scale": self.vectors.scale,
                                        "words": int(self.vectors.ids.numel()), "dtype": "int8"}

    # ---- settings ----------------------------------------------------------------------------
    def set_precision(self, precision: str) -> None:
        """Word scores (`logits`) with their two vocabulary-sized products in "int8" or "float32";
        "auto" (the default): int8 where torch has a quantised engine. int8 takes a query's products
        from 4.6 to 0.7 ms and ranks as float32 does (WordNet test MRR .2196 vs .2195, docs/results.md,
        Speed). Training always scores in float32."""
        if precision not in ("float32", "int8", "auto"):
            raise ValueError(f"unknown scoring precision {precision!r}; choose float32, int8 or auto")
        self.int8 = precision == "int8" or (precision == "auto" and quantised_engine())

    def swap(self, vectors: WordVectors | None = None, hub_penalty: HubPenalty | None = None
             ) -> tuple[WordVectors | None, HubPenalty | None]:
        """Score with `vectors` and `hub_penalty` (default: neither) from now on; returns the pair they
        replace, so that a caller changing the encoder can put the old pair back."""
        previous = self.vectors, self.hub_penalty
        self.vectors, self.hub_penalty = vectors, hub_penalty
        return previous

    def reset_open_vocabulary(self) -> None:
        """Forget the open vocabulary, its word tower, older map and weights (back to the defaults)."""
        self.open_vocab, self.tower, self.word_map = None, None, None
        self.config = DEFAULT_OPEN_VOCAB

    def candidates(self, extra: Iterable[Entry] | None = None, dictionary: Iterable[Entry] | None = None,
                   cached: bool = False) -> Candidates:
        """The words and phrases the open vocabulary answers with: `dictionary` (default: every WordNet
        lemma) and `extra` (default: `user_dictionary`). With `cached` and neither `dictionary` nor `extra`
        entries, WordNet's list is kept in the user cache as plain arrays and read back by later processes
        (core/words/candidate_cache.py: a few hundred ms, not 5-11 s); a user's own words are never written there."""
        extra = list(self.user_dictionary if extra is None else extra)

        def build() -> Candidates:
            entries = load_wordnet_lemmas() if dictionary is None else dictionary
            return Candidates([*entries, *extra], self.vocab, user_words=(e.word for e in extra))
        # a stand-in for WordNet's loader (tests put one in this module) is never cached under WordNet's name
        if dictionary is not None or extra or not cached or load_wordnet_lemmas is not lexicon_files.load_wordnet_lemmas:
            return build()
        from ..paths import user_cache_dir
        from .candidate_cache import cached_candidates, candidates_key

        key = candidates_key(WORDNET_SYNSETS_PATH, self.vocab.words)
        return cached_candidates(build, key, user_cache_dir("candidates"), self.vocab)

    # ---- scoring -----------------------------------------------------------------------------
    @torch.inference_mode()
    def logits(self, vectors: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Word scores over the head's vocabulary for sentence vectors (n, d) -> (n, V), on the CPU: the
        head's logits, plus scale * cos(u, word vector) with word vectors, minus the hubness correction."""
        u = torch.as_tensor(np.asarray(vectors, dtype=np.float32))
        return self.token_scores(u.reshape(-1, u.shape[-1]), int8=self.int8)

    def token_scores(self, u: torch.Tensor, int8: bool = False) -> torch.Tensor:
        """`logits` of u (n, d), with gradients through u unless `int8` (training the query adapter)."""
        logits = self.head(u.to(self.head.bias.device), int8=int8).cpu()  # (n, V): computed where the head is
        if self.vectors is not None:
            logits = logits + self.vectors.scores(u, logits.shape[1], int8=int8)
        if self.hub_penalty is not None:
            logits = self.hub_penalty.apply(logits)
        return logits

    @torch.inference_mode()
    def everyday_query(self, u: torch.Tensor, config: OpenVocabConfig) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(u_e (n, d), its word scores (n, V)): the query as the everyday expert reads it, through the adapter;
        None without one (or without an everyday expert): it reads u itself."""
        if self.adapter is None or config.everyday_share <= 0:
            return None
        everyday = self.adapter(u)  # (n, d)
        return everyday, self.logits(everyday)

    def scores(self, vectors: np.ndarray, word_filter: WordFilter = WordFilter(),
               exclude_words_of: Sequence[str] | None = None) -> WordScores:
        """Every candidate's score for each vector, what `ranked` ranks (the open vocabulary's
        candidates once set, else the head's words)."""
        logits = self.logits(vectors)  # (n, V)
        open_vocab = self.open_vocab  # read once: the warm-up may set it
        vocab = self.vocab if open_vocab is None else open_vocab.candidates.filters
        allowed = torch.from_numpy(vocab.mask(word_filter)).repeat(len(logits), 1)  # (n, C)
        for i, text in enumerate(exclude_words_of or ()):
            for word in query_words(text):
                for spelling in spellings(word):  # "grey" leaves out "gray" too
                    if (index := vocab.token_id(spelling)) is not None:
                        allowed[i, index] = False
        temperature = 1.0
        if open_vocab is not None:  # the allowed answers are those re-scored (approximate vectors)
            u = torch.as_tensor(np.asarray(vectors, dtype=np.float32)).reshape(len(logits), -1)  # (n, d)
            logits = open_vocab.scores(u, logits, self.everyday_query(u, open_vocab.config), allowed)  # (n, C)
            temperature = open_vocab.temperature
        logits = logits.masked_fill(~torch.from_numpy(vocab.candidate_mask), float("-inf"))  # (n, C)
        return WordScores(vocab, logits, (logits / temperature).softmax(-1), allowed)

    def ranked(self, vectors: np.ndarray, k: int = 10, word_filter: WordFilter = WordFilter(),
               exclude_words_of: Sequence[str] | None = None) -> list[list[tuple[str, float]]]:
        """The top-k words (with probabilities) for each sentence vector, inflections of a word
        already listed left out; words of `exclude_words_of[i]` never answer vector i."""
        scored = self.scores(vectors, word_filter, exclude_words_of)
        results = []
        for i in range(len(scored.scores)):
            # ranked by score, not probability: far below the first, probabilities underflow to 0 and tie
            scores = scored.scores[i].masked_fill(~scored.allowed[i], float("-inf"))
            top = scores.topk(min(INFLECTION_SLACK * k, int(scored.allowed[i].sum())))
            ranked = [(scored.vocab.words[j], float(scored.probabilities[i, j])) for j in top.indices.tolist()]
            results.append(without_inflections(ranked)[:k])
        return results


@dataclass(frozen=True)
class WordScores:
    """Scores (n, C) of every candidate of `vocab` (-inf for what can never be an answer), their
    probabilities (softmax over the candidates) and which candidates the filters allow (n, C)."""
    vocab: WordVocabulary
    scores: torch.Tensor
    probabilities: torch.Tensor
    allowed: torch.Tensor


def without_inflections(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`ranked` without the words whose plural-stripped form, in one spelling, an earlier word already
    has (trunk, trunks -> trunk; traveller, traveler): one word's forms should not crowd the list."""
    seen, kept = set(), []
    for word, score in ranked:
        stem = spelling_key(singular(word))
        if stem not in seen:
            seen.add(stem)
            kept.append((word, score))
    return kept


def _pos_of_dictionary_words() -> dict[str, set[str]]:
    """word -> parts of speech it has in the shipped WordNet dictionary ({} if it is absent)."""
    try:
        entries = load_wordnet()
    except FileNotFoundError:
        return {}
    pos_of: dict[str, set[str]] = {}
    for entry in entries:
        pos_of.setdefault(entry.word, set()).add(entry.pos)
    return pos_of

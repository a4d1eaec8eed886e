"""A vocabulary's filter masks are kept by the vocabulary itself: a dropped model's vocabulary is freed with it
(an `lru_cache` on the method kept every vocabulary it had seen alive, issue 73)."""
from __future__ import annotations

import gc
import weakref

from core.words.vocabulary import MASKS_KEPT, WordFilter, WordVocabulary


def test_a_filtered_vocabulary_is_garbage_collected_once_dropped():
    vocab = WordVocabulary(["leader", "lead", "loader", "[CLS]"])
    assert vocab.mask(WordFilter(initial="l")).sum() == 3  # a mask computed and kept
    dropped = weakref.ref(vocab)
    del vocab
    gc.collect()
    assert dropped() is None


def test_a_kept_mask_is_the_filters_own_and_a_callers_copy():
    vocab = WordVocabulary(["leader", "lead", "loader", "[CLS]"])
    first = vocab.mask(WordFilter(pattern="lea*"))
    assert first.tolist() == [True, True, False, False]
    first[:] = False  # the caller's copy: the kept mask is untouched
    assert vocab.mask(WordFilter(pattern="lea*")).tolist() == [True, True, False, False]


def test_the_kept_masks_stay_bounded():
    vocab = WordVocabulary(["leader", "lead", "loader"])
    for n in range(MASKS_KEPT + 5):
        vocab.mask(WordFilter(min_length=n))
    assert 0 < len(vocab._masks) <= MASKS_KEPT
    assert vocab.mask(WordFilter(min_length=5)).tolist() == [True, False, True]

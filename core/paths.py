"""Where things are: the repository's folders, each named once.

Shipped data lives in `core/data/` and `checkpoints/`; what the commands download or build goes to
`data/cache/` (git-ignored); SentEval's data is read from `../shared/data/senteval` beside the
repository when it is there (development machines and CI).
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CORE_DATA_DIR = REPO_ROOT / "core" / "data"
CHECKPOINTS_DIR = REPO_ROOT / "checkpoints"
CACHE_DIR = REPO_ROOT / "data" / "cache"
CORPUS_DIR = CACHE_DIR / "corpus"  # the first Vec2Sent corpus (core.corpus.classic)
MODERN_CORPUS_DIR = CACHE_DIR / "corpus-modern"  # the shipped decoder's corpus (core.corpus.modern)
HELDOUT_SENTENCES = MODERN_CORPUS_DIR / "heldout.jsonl"  # sources the decoder never trained on (issue 26)
SENTEVAL_DIR = REPO_ROOT.parent / "shared" / "data" / "senteval"
# People's descriptions of words (dev only: the reverse dictionary's judge, never trained on; issue 38)
HUMAN_DESCRIPTIONS = REPO_ROOT.parent / "shared" / "data" / "human-descriptions" / "thorat2016.tsv"
# People's descriptions of 3,722 words (Buchanan et al. 2019, GPL-3.0; issue 53): training data. In ../shared on
# development machines and in CI, else where `bash scripts/fetch_feature_norms.sh` builds it.
_SHARED_NORMS = REPO_ROOT.parent / "shared" / "data" / "feature-norms" / "feature-norms.tsv"
FETCHED_NORMS = CACHE_DIR / "feature-norms" / "feature-norms.tsv"
FEATURE_NORMS = _SHARED_NORMS if _SHARED_NORMS.is_file() else FETCHED_NORMS


def user_cache_dir(*parts: str) -> Path:
    """A folder of the user's cache, created: $DEFSENT_CACHE_DIR, else $XDG_CACHE_HOME/defsent-studio,
    else ~/.cache/defsent-studio (the app's caches, and the open vocabulary of `Engine.load`)."""
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = Path(os.environ.get("DEFSENT_CACHE_DIR") or xdg / "defsent-studio", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path

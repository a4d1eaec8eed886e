"""Ship a checkpoint's open-vocabulary vectors in the repository, product-quantized (8.4 MB, not 101 MB).

    python scripts/compact_vectors.py                                  # the shipped model
    python scripts/compact_vectors.py --model checkpoints/NAME --subspaces 32

Writes NAME/open_vocab_codes.safetensors (core.words.open_vocab.COMPACT_VECTORS), which `Engine.load` reads
when the user cache has no vectors for the model yet: a fresh clone answers with all 147k words seconds
after it starts instead of minutes. The vectors are read from the user cache, or embedded first (minutes
on 2 cores). Run it again after retraining a checkpoint: compact vectors of another model are ignored.
Quality and sizes: docs/results.md, "First launch".
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from core.checkpoint import DEFAULT_CHECKPOINT
from core.engine import Engine
from core.words.open_vocab import COMPACT_SUBSPACES
from core.words.open_vocab_fit import progress


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_CHECKPOINT, help="checkpoint folder")
    parser.add_argument("--subspaces", type=int, default=COMPACT_SUBSPACES,
                        help="bytes a vector; it must divide the vectors' width (384 for MiniLM)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False)
    target = engine.vocabulary.save_compact(args.subspaces, progress=progress("candidates"))
    print(f"{target}: {target.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

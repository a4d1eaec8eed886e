"""How long a download's compact open-vocabulary vectors take to make (issue 54, 4): product-quantize
`--rows` unit rows of `--width` numbers to `--subspaces` bytes a row, as `OpenVocabulary.save_compact`
does for the 264,081 words and definitions of WordNet (random rows: the time does not depend on them).

    python -m bench.bench_compact_vectors                  # the shipped model's size
    python -m bench.bench_compact_vectors --rows 20000     # a quick check
"""
from __future__ import annotations

import argparse
import time

import torch

from core.words.open_vocab import COMPACT_SUBSPACES
from core.words.product_quantizer import fit_codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=264_081)
    parser.add_argument("--width", type=int, default=384)
    parser.add_argument("--subspaces", type=int, default=COMPACT_SUBSPACES)
    args = parser.parse_args(argv)
    if not (1 <= args.rows <= 2_000_000 and 1 <= args.width <= 4096):
        parser.error("--rows must be 1 to 2,000,000 and --width 1 to 4,096")
    x = torch.nn.functional.normalize(torch.randn(args.rows, args.width, generator=torch.Generator().manual_seed(0)),
                                      dim=1)
    started, cpu = time.perf_counter(), time.process_time()
    codes, codebooks = fit_codes(x, args.subspaces)
    print(f"{args.rows:,} x {args.width} -> {args.subspaces} bytes a row: {time.perf_counter() - started:.1f} s wall, "
          f"{time.process_time() - cpu:.1f} s CPU, {codes.numel() + 2 * codebooks.numel():,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

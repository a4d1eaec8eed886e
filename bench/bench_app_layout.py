"""The Map tab lays a model's map of every word out itself (issue 39). Through the map
handler, as the app does: the model's kept map is moved aside, a draw starts the background layout, then the
next draw shows it; prints the job's time, the peak memory, and whether the layout equals the one moved aside
(the command's, when `python -m core vocabulary-map --model MODEL` made it).

    python -m bench.bench_app_layout --model checkpoints/NAME
"""
from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from app.handlers import EVERY_WORD_MAP, Session, Studio
from app.shared.jobs import JobManager
from app.shared.models import Models, ModelSpec
from app.views.projection import Projector
from core import Engine
from core.paths import user_cache_dir


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, type=Path)
    args = p.parse_args()
    engine = Engine.load(args.model, decoder=None, open_vocabulary=False)
    engine.vocabulary.enable(cache_dir=user_cache_dir("open-vocab"), compact=False)
    path = engine.vocabulary_layout_path()
    aside = Path(tempfile.mkdtemp())
    for kept in path.parent.glob(path.stem + "*"):  # the layout, its moves and its definitions
        shutil.move(kept, aside / kept.name)
    studio = Studio(Models.from_engine(engine, ModelSpec(args.model.name, args.model)), Projector(), JobManager())
    draw = lambda: studio.map.draw_map(EVERY_WORD_MAP, 0, "", None, "UMAP", "2-D", "part of speech", Session())
    before, started = peak_mb(), time.perf_counter()
    try:
        draw()
    except ValueError as err:
        print(f"first draw: {err}")
    studio.models.active().vocabulary_map.laying_out.thread.join()
    print(f"laid out in the background in {time.perf_counter() - started:.0f} s; peak memory {before:.0f} -> "
          f"{peak_mb():.0f} MB")
    _, status, session = draw()
    print(f"next draw: {status} ({len(session.map.moves)} arrows)")
    if (aside / path.name).is_file():
        print(f"the same layout as the one moved aside ({aside}): {np.array_equal(np.load(path), np.load(aside / path.name))}")


if __name__ == "__main__":
    main()

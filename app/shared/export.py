"""Downloads of a saved model: the checkpoint folder as a zip, and a sentence-transformers folder
(full encoder weights, tokenizer, pooling config and a model card), also zipped.

They are built in app.settings.download_dir(), a folder Gradio serves files from, which holds at
most MAX_DOWNLOAD_BYTES; each download is deleted after app.settings.DOWNLOAD_LIFETIME.
"""
from __future__ import annotations

import csv
import json
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from core.engine import Engine
from core.export import encoder_facts, save_sentence_transformers
from core.spreadsheet import inert
from core.explore import ProjectorPoints, zip_projector

from ..server.public import reserved
from ..settings import (DOWNLOAD_LIFETIME, DOWNLOAD_PREFIX, download_dir, download_folders, folder_bytes,
                        remove_old_downloads)

MAX_DOWNLOAD_BYTES = 1_000_000_000  # download folders in all: about 8 downloads of the shipped model
# A projector zip's bytes a vector value, reserved for it (and again for Gradio's copy): its "%.6g" text is 9-13 bytes a
# value and deflates to ~3.9 (measured on raw embeddings and on unit normals); 6 leaves room for less regular numbers.
ZIPPED_BYTES_PER_VALUE = 6
IN_USE_SECONDS = 60.0  # a download younger than this may not be copied yet: never evicted for space


def zip_folder(folder: Path, out_dir: Path | None = None) -> Path:
    """`folder` as `out_dir/<name>.zip` (a fresh temporary folder by default)."""
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX))
    return Path(shutil.make_archive(str(out_dir / folder.name), "zip", root_dir=folder.parent, base_dir=folder.name))


def export_sentence_transformers(engine: Engine, out: Path, name: str) -> Path:
    """Write `engine`'s encoder in the sentence-transformers folder format to `out`, with a model card."""
    save_sentence_transformers(engine, out)
    (out / "README.md").write_text(model_card(engine, name), encoding="utf-8")
    return out


def model_card(engine: Engine, name: str) -> str:
    """A Hugging Face model card (README.md with front matter) for the exported model."""
    manifest, encoder = engine.manifest, encoder_facts(engine)
    metrics = json.dumps(manifest.get("metrics", {}), indent=2)
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, sentence-similarity, feature-extraction, defsent]
---

# {name}

A sentence encoder fine-tuned with **DefSent** (Tsukagoshi et al., 2021) in DefSent Studio: a
definition's pooled embedding ({encoder.pooling} pooling) is trained so that a frozen
word-prediction head recovers the defined word.

- Base model: `{engine.base_source}` (fingerprint `{engine.base_fingerprint}`)
- Pooling: {encoder.pooling}; maximum length {encoder.max_length} tokens
- Exported from checkpoint: `{manifest.get('name', name)}` (created {manifest.get('created', 'unknown')})

## Usage

```python
from sentence_transformers import SentenceTransformer
model = SentenceTransformer("path/to/{name}")
embeddings = model.encode(["a person who is in charge", "the leader of a group"])
```

The word head is not part of this format; use the DefSent Studio checkpoint zip for the reverse
dictionary.

## Training data

{_training_data(manifest)}

## Metrics recorded at training time

```json
{metrics}
```
"""


def _training_data(manifest: dict) -> str:
    """The sources a checkpoint was trained on, with their licences, as Markdown list items."""
    lines = [f"- Encoder and word head: {manifest.get('training', {}).get('data', 'WordNet 3.0')} "
             "(WordNet 3.0 licence)"]
    for source in manifest.get("everyday_adapter", {}).get("training", {}).get("trained_on", []):
        cite = f"; cite: {source['citation']}" if source.get("citation") else ""
        lines.append(f"- The reverse dictionary's everyday query adapter (not part of the sentence-transformers "
                     f"format): {source['name']} ({source['license']}{cite})")
    return "\n".join(lines)


def download_files(engine: Engine, checkpoint: Path, root: Path | None = None,
                   keep_seconds: float = DOWNLOAD_LIFETIME, max_bytes: int = MAX_DOWNLOAD_BYTES) -> tuple[Path, Path]:
    """(checkpoint zip, sentence-transformers zip) for a saved checkpoint and its engine.

    Written to a fresh folder under `root` (default: app.settings.download_dir(), which Gradio
    serves). First the folders there older than `keep_seconds` are deleted, then the oldest others
    until this download fits in `max_bytes`; ValueError if it cannot fit (downloads under way) or
    cannot be written (e.g. a full disk), and then nothing of it is left.
    """
    try:
        with fresh_download_folder(root, expected_download_bytes(engine, checkpoint), keep_seconds, max_bytes) as work:
            st_folder = export_sentence_transformers(engine, work / f"{checkpoint.name}-sentence-transformers",
                                                     checkpoint.name)
            zips = zip_folder(checkpoint, work), zip_folder(st_folder, work)
            shutil.rmtree(st_folder)  # only its zip is offered
    except OSError as err:  # the reason only: its file name is a server path
        raise ValueError(f"Could not prepare the download ({err.strerror or type(err).__name__}); nothing "
                         "was kept. Try again later.") from err
    return zips


@contextmanager
def fresh_download_folder(root: Path | None, expected_bytes: int, keep_seconds: float = DOWNLOAD_LIFETIME,
                          max_bytes: int = MAX_DOWNLOAD_BYTES) -> Iterator[Path]:
    """A new folder under `root` (default: download_dir(), which Gradio serves) for the block to write a download
    of about `expected_bytes` into, once the downloads older than `keep_seconds`, then the oldest others, are gone
    so that it fits in `max_bytes`. In public mode its room, and that of the copy Gradio serves it from, is
    reserved in the disk budget while the block runs (the copy's a while longer: app.server.public.reserved). When the
    block raises, the folder is deleted."""
    root = Path(root or download_dir())
    root.mkdir(parents=True, exist_ok=True)
    remove_old_downloads(root, keep_seconds)
    make_room(root, expected_bytes, max_bytes)
    with reserved(2 * expected_bytes, "this download", copied=True) as written:
        work = Path(tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX, dir=root))
        written.append(work)
        try:
            yield work
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise


def csv_download(header: list[str], rows: list[list], name: str, root: Path | None = None) -> Path:
    """`rows` under `header` as `name`.csv in a fresh download folder (UTF-8, Excel's dialect)."""
    with fresh_download_folder(root, 2 * sum(len(str(v)) + 3 for row in rows for v in row)) as work:
        path = work / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow([inert(name) for name in header])
            writer.writerows([[inert(v) for v in row] for row in rows])
    return path


def projector_download(vectors: np.ndarray, columns: dict[str, list[str]], root: Path | None = None,
                       keep_seconds: float = DOWNLOAD_LIFETIME, max_bytes: int = MAX_DOWNLOAD_BYTES,
                       name: str = "defsent-map") -> Path:
    """Points (vectors (n, d) and metadata `columns`) as the Embedding Projector's vectors.tsv and
    metadata.tsv, zipped as `name`.zip in a fresh download folder under `root`, as `download_files` makes room.
    The files are written into the zip line by line (`zip_projector`): the zip alone is on disk."""
    metadata_bytes = sum(4 * len(v) + 1 for column in columns.values() for v in column)  # UTF-8: 4 bytes a character
    expected = ZIPPED_BYTES_PER_VALUE * vectors.size + metadata_bytes
    with fresh_download_folder(root, expected, keep_seconds, max_bytes) as work:
        return zip_projector(work / f"{name}.zip", ProjectorPoints(vectors, columns), name)


def expected_download_bytes(engine: Engine, checkpoint: Path) -> int:
    """About what a download takes on disk at its peak: the checkpoint's zip, and the encoder's float32
    weights twice (the sentence-transformers folder and its zip exist together until the folder is
    deleted; zipped weights hardly shrink)."""
    return folder_bytes(checkpoint) + 2 * 4 * encoder_facts(engine).parameters


def make_room(root: Path, needed: int, max_bytes: int) -> None:
    """Delete the oldest download folders under `root` (none younger than IN_USE_SECONDS) until
    `needed` more bytes fit in `max_bytes`; ValueError if they cannot."""
    folders = [(folder, folder_bytes(folder)) for folder in download_folders(root)]
    used = sum(size for _, size in folders)
    for folder, size in folders:
        if used + needed <= max_bytes or time.time() - folder.stat().st_mtime < IN_USE_SECONDS:
            break
        shutil.rmtree(folder, ignore_errors=True)
        used -= size
    if used + needed > max_bytes:
        raise ValueError(f"The server is preparing too many downloads right now (at most {max_bytes / 1e9:g} GB "
                         f"at a time; this one needs {needed / 1e6:,.0f} MB); try again in a minute.")

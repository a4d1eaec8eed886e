"""Downloads of a saved model: the checkpoint folder as a zip, and a sentence-transformers folder
(full encoder weights, tokenizer, pooling config and a model card), also zipped.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from core.engine import Engine

DOWNLOAD_PREFIX = "defsent-download-"
DOWNLOAD_LIFETIME = 3600.0  # seconds a download folder is kept (Gradio has copied it long before)
ST_POOLING_MODES = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
                    "max": "pooling_mode_max_tokens"}


def zip_folder(folder: Path, out_dir: Path | None = None) -> Path:
    """`folder` as `out_dir/<name>.zip` (a fresh temporary folder by default)."""
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX))
    return Path(shutil.make_archive(str(out_dir / folder.name), "zip", root_dir=folder.parent, base_dir=folder.name))


def export_sentence_transformers(engine: Engine, out: Path, name: str) -> Path:
    """Write `engine`'s encoder in the sentence-transformers folder format to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    engine.encoder.backbone.save_pretrained(out)
    engine.encoder.tokenizer.save_pretrained(out)
    pooling = {mode: False for mode in ST_POOLING_MODES.values()}
    pooling[ST_POOLING_MODES[engine.encoder.pooling]] = True
    _write_json(out / "1_Pooling" / "config.json", {"word_embedding_dimension": engine.encoder.hidden_size,
                                                    **pooling})
    _write_json(out / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    _write_json(out / "sentence_bert_config.json", {"max_seq_length": engine.encoder.max_length,
                                                    "do_lower_case": False})
    _write_json(out / "config_sentence_transformers.json", {"similarity_fn_name": "cosine"})
    (out / "README.md").write_text(model_card(engine, name), encoding="utf-8")
    return out


def model_card(engine: Engine, name: str) -> str:
    """A Hugging Face model card (README.md with front matter) for the exported model."""
    manifest = engine.manifest
    metrics = json.dumps(manifest.get("metrics", {}), indent=2)
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, sentence-similarity, feature-extraction, defsent]
---

# {name}

A sentence encoder fine-tuned with **DefSent** (Tsukagoshi et al., 2021) in DefSent Studio: a
definition's pooled embedding ({engine.encoder.pooling} pooling) is trained so that a frozen
word-prediction head recovers the defined word.

- Base model: `{engine.base_source}` (fingerprint `{engine.base_fingerprint}`)
- Pooling: {engine.encoder.pooling}; maximum length {engine.encoder.max_length} tokens
- Exported from checkpoint: `{manifest.get('name', name)}` (created {manifest.get('created', 'unknown')})

## Usage

```python
from sentence_transformers import SentenceTransformer
model = SentenceTransformer("path/to/{name}")
embeddings = model.encode(["a person who is in charge", "the leader of a group"])
```

The word head is not part of this format; use the DefSent Studio checkpoint zip for the reverse
dictionary.

## Metrics recorded at training time

```json
{metrics}
```
"""


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def download_files(engine: Engine, checkpoint: Path, root: Path | None = None,
                   keep_seconds: float = DOWNLOAD_LIFETIME) -> tuple[Path, Path]:
    """(checkpoint zip, sentence-transformers zip) for a saved checkpoint and its engine.

    Written to a fresh folder under `root` (default: the system temp folder); folders there older
    than `keep_seconds` are deleted first, so downloads do not pile up on disk. Gradio copies a
    returned file into its own cache, which it cleans itself.
    """
    root = Path(root or tempfile.gettempdir())
    remove_old_downloads(root, keep_seconds)
    work = Path(tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX, dir=root))
    st_folder = export_sentence_transformers(engine, work / f"{checkpoint.name}-sentence-transformers",
                                             checkpoint.name)
    zips = zip_folder(checkpoint, work), zip_folder(st_folder, work)
    shutil.rmtree(st_folder)  # only its zip is offered
    return zips


def remove_old_downloads(root: Path, keep_seconds: float) -> None:
    """Delete download folders under `root` last changed more than `keep_seconds` ago."""
    cutoff = time.time() - keep_seconds
    for folder in root.glob(f"{DOWNLOAD_PREFIX}*"):
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)

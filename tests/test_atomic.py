"""core.atomic: one helper for every file that others read (unique temporary, fsync, rename,
clean-up on failure), and the writers that use it."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from core import atomic
from core.atomic import atomic_file, save_json_atomically, save_npy_atomically, save_text_atomically
from core.words import open_vocab


def leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_two_writers_interleaved_each_write_whole_and_the_last_wins(tmp_path):
    path = tmp_path / "cache.txt"
    with atomic_file(path) as first:
        first.write_text("first " * 1000)
        with atomic_file(path) as second:  # a second writer starts and finishes in the middle
            assert second != first
            second.write_text("second")
        assert path.read_text() == "second"
    assert path.read_text() == "first " * 1000
    assert leftovers(tmp_path, {"cache.txt"}) == []


def test_two_threads_writing_one_file_never_leave_half_a_file(tmp_path):
    path = tmp_path / "v.npy"
    arrays = [np.full((200, 64), k, dtype=np.float32) for k in range(2)]
    errors, seen = [], []

    def write(k):
        try:
            for _ in range(40):
                save_npy_atomically(path, arrays[k])
        except Exception as err:  # noqa: BLE001 - the assertion below names it
            errors.append(err)

    def read():
        while any(w.is_alive() for w in writers) or not seen:
            if path.exists():
                seen.append(float(np.load(path).mean()))

    writers = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    reader = threading.Thread(target=read)
    for t in [*writers, reader]:
        t.start()
    for t in [*writers, reader]:
        t.join()
    assert errors == []
    assert seen and set(seen) <= {0.0, 1.0}
    assert float(np.load(path).mean()) in (0.0, 1.0)
    assert leftovers(tmp_path, {"v.npy"}) == []


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path):
    path = save_text_atomically(tmp_path / "a.json", "old")
    with pytest.raises(RuntimeError):
        with atomic_file(path) as partial:
            partial.write_text("half")
            raise RuntimeError("killed")
    assert path.read_text() == "old"
    assert leftovers(tmp_path, {"a.json"}) == []


def test_suffix_kept_so_numpy_writes_where_it_is_told(tmp_path):
    save_npy_atomically(tmp_path / "x.npy", np.arange(3))
    save_json_atomically(tmp_path / "y.json", {"a": 1})
    assert np.load(tmp_path / "x.npy").tolist() == [0, 1, 2]
    assert (tmp_path / "y.json").read_text() == '{\n "a": 1\n}'
    assert leftovers(tmp_path, {"x.npy", "y.json"}) == []


def test_open_vocab_writers_of_one_cache_do_not_collide(tmp_path, monkeypatch):
    """Two writers of one vectors file at once: the second starts while the first is writing. With a
    fixed temporary name the second's rename took the first's file away (FileNotFoundError)."""
    path = tmp_path / "vectors.safetensors"
    real_save = open_vocab.save_file
    nested = []

    def save_then_interleave(tensors, filename, metadata=None):
        real_save(tensors, filename, metadata=metadata)
        if not nested:
            nested.append(True)
            open_vocab._save_atomically({"v": torch.zeros(2)}, path)

    monkeypatch.setattr(open_vocab, "save_file", save_then_interleave)
    open_vocab._save_atomically({"v": torch.ones(2)}, path)
    assert load_file(path)["v"].tolist() == [1.0, 1.0]
    assert leftovers(tmp_path, {"vectors.safetensors"}) == []


def test_every_module_writes_through_the_one_helper():
    """No hand-written temporary-then-rename left in core/ (the helpers themselves excepted)."""
    import re
    from pathlib import Path

    core = Path(atomic.__file__).parent
    hand_written = [str(p.relative_to(core)) for p in core.rglob("*.py")
                    if p.name not in ("atomic.py", "checkpoint.py")
                    and re.search(r"\.(replace|rename)\((path|out|partial|tmp)\b|os\.replace\(", p.read_text())]
    assert hand_written == []

"""transformers imported lazily from many threads at once (core/runtime/imports.py): a public server's
concurrent requests answered "Something went wrong (ImportError)" when two of them were first to need it."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

# Threads released together: half ask a BERT folder's tokenizer for what only transformers' own answers (it loads
# that on first use), half load the tokenizer of a folder that needs transformers from the start.
RACE = textwrap.dedent("""
    import sys, threading
    from core.tokenizer import load_tokenizer
    bert = load_tokenizer(sys.argv[1])
    assert "transformers" not in sys.modules, "imported too early: the race would not be run"
    barrier, errors = threading.Barrier(8), []
    def ask(work):
        barrier.wait()
        try:
            work()
        except Exception as err:
            errors.append(repr(err))
    works = [lambda: bert(["a b"]), lambda: load_tokenizer(sys.argv[2])] * 4
    threads = [threading.Thread(target=ask, args=(work,)) for work in works]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
    print(errors)
""")


def test_first_imports_from_many_threads_at_once_all_succeed(tiny_mlm_dir: Path, tmp_path: Path):
    plain = tmp_path / "wordpiece-only"  # no tokenizer.json: load_tokenizer needs transformers' AutoTokenizer
    plain.mkdir()
    for name in ("vocab.txt", "tokenizer_config.json", "config.json"):
        shutil.copy(tiny_mlm_dir / name, plain / name)
    root = Path(__file__).resolve().parents[1]
    runs = [subprocess.Popen([sys.executable, "-c", RACE, str(tiny_mlm_dir), str(plain)], cwd=root,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [run.communicate(timeout=120) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err[-2000:]
        assert out.strip() == "[]", out  # no thread's import failed, in any of the processes


def test_core_and_app_import_transformers_only_through_the_lock():
    root = Path(__file__).resolve().parents[1]
    direct = [f"{path.relative_to(root)}:{number}" for folder in ("core", "app") for path in (root / folder).rglob("*.py")
              if path.name != "imports.py"
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if re.match(r"\s*(from transformers[ .]|import transformers\b)", line)]
    assert direct == []

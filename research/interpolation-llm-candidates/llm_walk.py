"""Session 51, issue 74 item 4: an interpolation's candidates plus sentences that Gemma 3 270M (the packaged fluency
model, a base LM) samples "between" x and y from a few-shot prompt; each path's walk as shipped otherwise.

    PYTHONPATH=. python research/interpolation-llm-candidates/llm_walk.py dev 8 > OUT.jsonl   # 8 samples a pair
    PYTHONPATH=. python research/interpolation-llm-candidates/llm_walk.py dev 0 > OUT.jsonl   # as shipped

One JSON line a path (its sentences, own flags, gains), then "# own SHARE gain GAIN gen s SECONDS".
"""
import sys, json, time, torch
from pathlib import Path
import core.readout as readout
from core.vec2sent.paths import path_candidates
from core.vec2sent.grammar import agreement_variants
from bench.path_set import interpolation_pairs
from bench.bench_paths import SETTINGS, path_measures
from core import Engine
from core.encoder import l2_normalize
from core.readout import EmbeddedTexts
PROMPT = """Each pair of sentences A and B is followed by a sentence that lies halfway between them: it keeps some of A and takes some of B, and reads as one natural sentence.

A: A man is cutting a tomato on a board.
B: A woman is slicing an onion.
Between: A woman is cutting a tomato.

A: Heavy rain floods streets in Mumbai
B: Storm leaves thousands without power in Mumbai
Between: Heavy storm floods streets in Mumbai

A: The children are playing football in the park.
B: Two boys kick a ball on the beach.
Between: The children are kicking a ball in the park.

A: You should water the plant once a week.
B: Cacti need very little water.
Between: You should water a cactus very little.

A: {x}
B: {y}
Between:"""
torch.set_num_threads(1)
split, samples = sys.argv[1], int(sys.argv[2])
engine = Engine.load()
lm = engine.reader.fluency_model
GEN_TIME = []
def generated(x, y):
    tok, model = lm.tokenizer, lm.model
    ids = tok(PROMPT.format(x=x, y=y), return_tensors="pt")
    torch.manual_seed(0)
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=32, num_return_sequences=samples, do_sample=True,
                             temperature=0.8, top_p=0.95, pad_token_id=tok.eos_token_id)
    GEN_TIME.append(time.perf_counter() - t)
    texts = [tok.decode(o[ids["input_ids"].shape[1]:], skip_special_tokens=True).split("\n")[0].strip() for o in out]
    return [t for t in dict.fromkeys(texts) if t and not agreement_variants(t)]
def candidates(x, y, decoded, edits=True, cased=str):
    return list(dict.fromkeys([*path_candidates(x, y, decoded, edits, cased), *generated(x, y)]))
if samples:
    readout.path_candidates = candidates
ref = EmbeddedTexts(["a"], l2_normalize(engine.encode(["a"])), name="one")
pairs = interpolation_pairs(Path(__file__).resolve().parents[2].parent / "shared", 40, split=split)
own_all, gains_all = [], []
for x, y in pairs:
    pts = engine.interpolate(x, y, steps=6, reference=ref, k=3, settings=SETTINGS["app"])
    own, gains, steady = path_measures(engine, x, y, pts)
    own_all += own; gains_all += gains
    print(json.dumps({"x": x, "y": y, "path": [p.decoded for p in pts], "own": own, "gains": gains, "steady": steady}), flush=True)
import numpy as np
print(f"# own {np.mean(own_all):.3f} gain {np.mean(gains_all):+.5f} gen s {np.mean(GEN_TIME) if GEN_TIME else 0:.2f}", flush=True)

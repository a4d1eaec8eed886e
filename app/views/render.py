"""Rendering: HTML snippets, table rows and plotly figures built from the services' plain data.

All user-provided text is HTML-escaped before it is put into markup.
"""
from __future__ import annotations

import re
from html import escape
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from core.answers import SCORE_NOTE, relative_scores

from ..shared.services import POS_NAMES, WordRow

HOVER_CHARS = 90
LABELLED_POINTS = 60  # a map of at most this many points (one's own sentences or file) names each point on it
LABEL_CHARS = 28  # of a point's text its name on the map shows
# A point's second hover line (a word's first definition on the map of every word): 147k of them are
# about 9 MB of JSON, sent after the map is drawn (`trace_details`; docs/results.md "One map of every word")
DETAIL_CHARS = 56
# Above this many points markers are drawn 3 px wide, not 5: Chromium without a GPU fills every marker's
# pixels in software, so the first draw of the 147k-word map took 1.4 s a frame at 5 px, 1.0 s at 3 px
# (bench/bench_map_browser.py; docs/results.md "One map of every word").
DENSE_POINTS = 20_000
LABEL_CHARS = 40
MAP_HEIGHT = 640  # px of a map: plotly's default 450 left a strip once the legend took its share of the width


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def words_html(rows: Sequence[WordRow], title: str) -> str:
    """A ranked word list with score bars (`relative_scores`) and each word's dictionary definitions."""
    if not rows:
        return f"<div class='ds-words'><h4>{escape(title)}</h4><p>No word passes these filters.</p></div>"
    items = []
    for rank, (row, score) in enumerate(zip(rows, relative_scores([r.probability for r in rows])), 1):
        definitions = "".join(f"<li><i>{escape(POS_NAMES.get(e.pos, e.pos))}</i> {escape(e.definition)}</li>"
                              for e in row.definitions) or "<li><i>not in the dictionary</i></li>"
        items.append(
            f"<div class='ds-word'><div class='ds-head'><span class='ds-rank'>{rank}.</span>"
            f"<b class='ds-w'>{escape(row.written or row.word)}</b>"
            + (f"<span class='ds-lemma' title='the form your description asks for, with the senses of "
               f"{escape(row.word)}'> ({escape(row.word)})</span>" if row.written else "") +
            f"<span class='ds-p' title='probability {row.probability:.4%}'>{score}</span></div>"
            f"<div class='ds-bar' style='width:{score}%'></div>"
            f"<ul class='ds-defs'>{definitions}</ul></div>")
    return (f"<div class='ds-words'><h4>{escape(title)}</h4><p class='ds-note'>{SCORE_NOTE}</p>"
            f"{''.join(items)}</div>")


def job_description_html(description: str) -> str:
    """A job's description as the first line of its progress."""
    return f"<div class='ds-progress-text'><b>{escape(description)}</b></div>"


def notice_html(message: str) -> str:
    return f"<div class='ds-notice'>{escape(message)}</div>"


def progress_html(fraction: float, text: str) -> str:
    """A progress bar with a caption."""
    fraction = min(max(fraction, 0.0), 1.0)
    return (f"<div class='ds-progress'><div class='ds-progress-fill' style='width:{100 * fraction:.1f}%'></div></div>"
            f"<div class='ds-progress-text'>{escape(text)}</div>")


def embedding_progress_html(building: tuple[int, int, float] | None, what: str = "") -> str:
    """A progress bar of background embedding (done, total, seconds left) of `what` (named first, when given), or ""
    when none runs."""
    if not building:
        return ""
    return progress_html(building[0] / building[1], (f"{what}: " if what else "") + embedding_progress(*building))


def embedding_progress(done: int, total: int, seconds_left: float) -> str:
    """"embedding 52,000/264,003 (once per model; about 3 min left)"; once all are embedded, what remains (saving
    and reading them back takes seconds, which read "about 0 s left")."""
    if done >= total:
        return f"all {total:,} embedded; saving them and switching to them (seconds)"
    left = f"about {seconds_left / 60:.0f} min left" if seconds_left >= 90 else f"about {seconds_left:.0f} s left"
    return f"embedding {done:,}/{total:,} (once per model; {left})"


TRAINING_STAGE = "training"  # app.shared.finetune's name of the stage that reports step counts


def busy_html(text: str) -> str:
    """An indeterminate (pulsing) bar with a caption: work under way whose length is unknown."""
    return (f"<div class='ds-progress'><div class='ds-progress-fill ds-progress-pulse'></div></div>"
            f"<div class='ds-progress-text'>{escape(text)}</div>")


def job_progress_html(progress: dict) -> str:
    """The progress bar of a running fine-tuning job, with stage, step, loss and dev MRR. Only the
    training stage counts steps (the other stages keep its last count): they get a pulsing bar."""
    step, total = progress.get("step", 0), progress.get("total", 0)
    if progress.get("stage") != TRAINING_STAGE or not total:
        return busy_html(f"{progress.get('stage', 'starting')}...")
    parts = [f"{progress.get('stage', 'starting')}: step {step}/{total}"]
    if progress.get("loss") is not None:
        parts.append(f"loss {progress['loss']:.4f}")
    if progress.get("dev_mrr") is not None:
        parts.append(f"dev MRR {progress['dev_mrr']:.4f}")
    return progress_html(step / total if total else 0, ", ".join(parts))


def word_list(words: Sequence[tuple[str, float]]) -> str:
    """The words, best first (their probabilities over every word are all near 0 %: `relative_scores`)."""
    return ", ".join(w for w, _ in words)


def word_score_rows(words: Sequence[tuple[str, float]]) -> list[list]:
    """[word, score (`relative_scores`)] rows."""
    return [[w, score] for (w, _), score in zip(words, relative_scores([p for _, p in words]))]


def scored_rows(hits: Sequence[tuple[str, float]]) -> list[list]:
    """[rank, cosine, text] rows."""
    return [[rank, round(score, 4), text] for rank, (text, score) in enumerate(hits, 1)]


def heatmap_figure(sentences: Sequence[str], matrix: np.ndarray) -> go.Figure:
    labels = [f"{i + 1}. {shorten(s, 30)}" for i, s in enumerate(sentences)]
    fig = go.Figure(go.Heatmap(z=np.round(matrix, 3), x=labels, y=labels, zmin=-1, zmax=1, colorscale="RdBu",
                               reversescale=True, texttemplate="%{z:.2f}",
                               hovertemplate="%{y}<br>%{x}<br>cos %{z:.3f}<extra></extra>"))
    fig.update_layout(title="Cosine similarity", yaxis_autorange="reversed", margin=dict(l=10, r=10, t=40, b=10))
    return fig


def scatter_figure(coords: np.ndarray, texts: Sequence[str], groups: Sequence[str], title: str,
                   highlight: Sequence[int] = (), symbols: dict[str, str] | None = None) -> go.Figure:
    """One trace per group (legend = colour), hover shows the text; `highlight` points are ringed."""
    coords = np.asarray(coords)
    three_d = coords.shape[1] == 3
    size = 9 if symbols else 3 if len(coords) > DENSE_POINTS else 5
    hovers = [hover_text(t) for t in texts]
    fig = go.Figure()
    indices = group_indices(groups)
    ranks = legend_ranks([str(g) for g in indices])
    for group, idx in indices.items():
        fig.add_trace(_points(coords[idx], [hovers[i] for i in idx], str(group), three_d,
                              marker=dict(size=size, symbol=(symbols or {}).get(group, "circle")),
                              legendrank=ranks[str(group)]))
    if len(coords) <= LABELLED_POINTS:  # a few texts of one's own: each named on the map, not only on hover
        fig.add_trace(_labels(coords, [shorten(t, LABEL_CHARS) for t in texts], three_d))
    if len(highlight):
        idx = list(highlight)
        fig.add_trace(_points(coords[idx], [hovers[i] for i in idx], "search hits", three_d,
                              marker=dict(size=14, color="rgba(0,0,0,0)", line=dict(width=3, color="black"))))
    # The legend below the map: beside it, it took half the width of a phone's map.
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40, b=10), height=MAP_HEIGHT,
                      legend=dict(itemsizing="constant", orientation="h", yanchor="top", y=-0.06))
    return fig


def legend_ranks(names: Sequence[str]) -> dict[str, int]:
    """{group name: its place in the legend}: by number when each name starts or ends with one (numbers'
    bins "1990 to 1996", years, "cluster 12"), else as they come; "(other)"-like names after them. Ranks
    stay below plotly's default (1000), so the traces added after the groups (search hits, a search's
    star) follow them. The traces keep their order (`group_indices`), which selections name points by."""
    numbers = {n: re.match(r"-?\d+(?:\.\d+)?", n) or re.search(r"(?<![\d.])\d+(?:\.\d+)?$", n) for n in names}
    named = [n for n in names if not n.startswith("(")]
    if named and all(numbers[n] for n in named):
        named.sort(key=lambda n: (float(numbers[n].group()), n))
    return {name: rank for rank, name in enumerate(named + [n for n in names if n.startswith("(")])}


def group_indices(groups: Sequence[str]) -> dict[str, list[int]]:
    """{group: the indices of its points}, in the order of `scatter_figure`'s traces: point p of trace t
    (a selection in the browser) is point `list(group_indices(groups).values())[t][p]`."""
    indices: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        indices.setdefault(group, []).append(i)
    return indices


def hover_text(text: str) -> str:
    """A point's hover: its text shortened, HTML-escaped."""
    return escape(shorten(text, HOVER_CHARS))


def trace_details(groups: Sequence[str], details: Sequence[str]) -> list[dict]:
    """[{"name": trace name, "details": the second hover line of each of its points}] for the group traces
    of `scatter_figure`: `details[i]` (of point i) shortened and HTML-escaped. The page's script
    (app/tabs/map.py MAP_JS) adds them to the drawn map's hover texts: sent after the draw, they do not slow it."""
    return [{"name": str(group), "details": [escape(shorten(details[i], DETAIL_CHARS)) for i in points]}
            for group, points in group_indices(groups).items()]


def _points(xyz: np.ndarray, hover: Sequence[str], name: str, three_d: bool, **style):
    """A trace of markers at `xyz` (n, 2 or 3), each hovering its (escaped) `hover` text; `style`: the
    trace's other settings (marker, legendrank)."""
    if three_d:
        return go.Scatter3d(x=xyz[:, 0], y=xyz[:, 1], z=xyz[:, 2], mode="markers", name=name, text=hover,
                            hoverinfo="text", **style)
    return go.Scattergl(x=xyz[:, 0], y=xyz[:, 1], mode="markers", name=name, text=hover, hoverinfo="text",
                        **style)


def _labels(xyz: np.ndarray, labels: Sequence[str], three_d: bool):
    """A trace of `labels` written above the points `xyz` (n, 2 or 3): no markers, no hover, not in the legend
    (after the points' own traces: a selection names points by those)."""
    style = dict(mode="text", text=[escape(t) for t in labels], textposition="top center", hoverinfo="skip",
                 showlegend=False, name="labels", textfont=dict(size=11))
    if three_d:
        return go.Scatter3d(x=xyz[:, 0], y=xyz[:, 1], z=xyz[:, 2], **style)
    return go.Scattergl(x=xyz[:, 0], y=xyz[:, 1], **style)


def placeholder_figure(hint: str) -> go.Figure:
    """An empty WebGL plot with a hint: shown before the first map, so the browser has loaded plotly and
    made its WebGL context by the time a map is drawn (the first draw of the 147k-word map: 1.4 s less)."""
    fig = go.Figure(go.Scattergl(x=[], y=[], mode="markers"))
    fig.update_layout(annotations=[dict(text=escape(hint), showarrow=False, xref="paper", yref="paper", x=0.5,
                                        y=0.5, font=dict(size=16))],
                      xaxis=dict(visible=False), yaxis=dict(visible=False), margin=dict(l=10, r=10, t=10, b=10))
    return fig


SEARCH_ZOOM = 8  # how much closer a search on a fixed map shows where it lands (the 48 region names show there)
REGION_LABELS = "region names"  # the label traces' name: app/tabs/map.py's MAP_JS shows one level at a time


# A region name's size as a share of the map's view, on a phone (about 350 x 640 px; 12-13 px text): names
# that would overlap there are left out, the larger region's kept.
LABEL_CHAR_WIDTH = 1 / 45
LABEL_LINE_HEIGHT = 1 / 30


def spaced_regions(regions: Sequence, span: Sequence[float]) -> list:
    """The regions whose names do not overlap on a view of `span` (width, height in map units), larger
    regions first; in their order. A name is a box of its characters' width and one line high at its centre."""
    kept: list[tuple[float, float, float, float]] = []  # (x, y, half width, half height)
    shown = set()
    for i in sorted(range(len(regions)), key=lambda i: -regions[i].size):
        r = regions[i]
        half = (len(r.name) * LABEL_CHAR_WIDTH * span[0] / 2, LABEL_LINE_HEIGHT * span[1] / 2)
        if all(abs(r.x - x) >= half[0] + w or abs(r.y - y) >= half[1] + h for x, y, w, h in kept):
            kept.append((r.x, r.y, *half))
            shown.add(i)
    return [r for i, r in enumerate(regions) if i in shown]


def add_region_labels(fig: go.Figure, levels: Sequence[Sequence], extent: Sequence[float]) -> go.Figure:
    """One text trace per level of `levels` (each a list of core.explore.vocabulary_map.Region, coarse to fine);
    only the first shows until the page's script (MAP_JS) shows the level that suits the zoom: level l from
    4^l / 2 times closer than the whole map, whose `extent` (width, height) is given. Names that would overlap
    there are left out (`spaced_regions`)."""
    for level, regions in enumerate(levels):
        widest = max(1.0, 4 ** level / 2)  # the least zoom MAP_JS shows this level at (it rounds log4 of the zoom)
        regions = spaced_regions(regions, [side / widest for side in extent])
        fig.add_trace(go.Scattergl(x=[r.x for r in regions], y=[r.y for r in regions], mode="text",
                                   text=[escape(r.name) for r in regions], name=REGION_LABELS, meta=level,
                                   visible=level == 0, showlegend=False, hoverinfo="skip",
                                   textfont=dict(size=13 if level == 0 else 11, color="#222")))
    return fig


def add_points(fig: go.Figure, xy: np.ndarray, labels: Sequence[str], name: str) -> go.Figure:
    """Diamonds at `xy` (n, 2), each hovering its label: texts of another collection landed on a map."""
    fig.add_trace(go.Scattergl(x=xy[:, 0], y=xy[:, 1], mode="markers", name=name, hoverinfo="text",
                               text=[hover_text(t) for t in labels],
                               marker=dict(size=11, symbol="diamond", color="crimson",
                                           line=dict(width=1, color="white"))))
    return fig


def add_moves(fig: go.Figure, moves: Sequence[dict]) -> go.Figure:
    """An arrow per moved word ({word, before: [x, y], after: [x, y]}): from where the model it was
    fine-tuned from read its definitions to its place now, named at its head."""
    for move in moves:
        (x0, y0), (x1, y1) = move["before"], move["after"]
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=2, arrowwidth=1.5, arrowcolor="crimson", text=escape(shorten(move["word"])),
                           font=dict(size=11, color="crimson"))
    return fig


def add_marker(fig: go.Figure, xy: np.ndarray, label: str) -> go.Figure:
    """A star at `xy` (2,) named `label`: where a search lands on a fixed map."""
    fig.add_trace(go.Scattergl(x=[xy[0]], y=[xy[1]], mode="markers+text", name="your search",
                               text=[hover_text(label)], textposition="top center",
                               marker=dict(size=20, symbol="star", color="gold", line=dict(width=1.5, color="black"))))
    return fig


def fly_to(fig: go.Figure, xy: np.ndarray, coords: np.ndarray, zoom: float = SEARCH_ZOOM) -> go.Figure:
    """The view `zoom` times closer than the whole map `coords` (n, 2), centred on `xy` (2,): a search flies
    to where it lands. The whole map's x range goes with the figure (`layout.meta.full_x`), so the page's
    script (app/tabs/map.py MAP_JS) names the regions of the zoom level it opens at."""
    low, high = coords.min(0), coords.max(0)  # (2,), (2,)
    half = (high - low).max() / (2 * zoom)
    fig.update_layout(xaxis_range=[xy[0] - half, xy[0] + half], yaxis_range=[xy[1] - half, xy[1] + half],
                      meta={"full_x": [float(low[0]), float(high[0])]})
    return fig


def path_chart(points: Sequence) -> go.Figure:
    """An interpolation by step (core.readout.InterpolationPoint): each step's cosine to the two ends
    (dashed) and, with a decoder, its sentence's cosine to its point and to the two ends' sentences."""
    alphas = [p.alpha for p in points]
    fig = go.Figure()
    lines = [("point · From", [p.cos_x for p in points], "dash"), ("point · To", [p.cos_y for p in points], "dash")]
    if points and points[0].fit is not None:
        lines += [("sentence · its point", [p.fit for p in points], "solid"),
                  ("sentence · From", [p.decoded_cos_x for p in points], "solid"),
                  ("sentence · To", [p.decoded_cos_y for p in points], "solid")]
    for name, values, dash in lines:
        fig.add_trace(go.Scatter(x=alphas, y=values, name=name, mode="lines+markers", line=dict(dash=dash),
                                 text=[p.decoded or "" for p in points], hovertemplate="%{y:.3f}<br>%{text}"))
    # the legend below the x-axis title (plotly's horizontal legend sits on it otherwise); the margin grows to fit
    fig.update_layout(title="Cosines along the path", xaxis_title="alpha (0 = From, 1 = To)", yaxis_title="cosine",
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", yanchor="top", y=-0.25))
    return fig


def training_figure(history: Sequence[dict]) -> go.Figure:
    """Smoothed training loss and dev MRR by step."""
    steps = [h["step"] for h in history]
    fig = go.Figure(go.Scatter(x=steps, y=[h["loss"] for h in history], name="loss", mode="lines"))
    fig.add_trace(go.Scatter(x=steps, y=[h["dev_mrr"] for h in history], name="dev MRR", mode="lines+markers",
                             yaxis="y2"))
    fig.update_layout(title="Training", xaxis_title="step", yaxis=dict(title="loss"),
                      yaxis2=dict(title="dev MRR", overlaying="y", side="right"),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def manifest_summary(manifest: dict) -> str:
    """A checkpoint's manifest as a short Markdown list (what a person asks first: what it is, what it
    was trained on, how well it names words); the parts it lacks are left out."""
    base, training, metrics = manifest.get("base", {}), manifest.get("training") or {}, manifest.get("metrics", {})
    result = training.get("result") or {}
    rows = [("Model", manifest.get("name")), ("Created", manifest.get("created")),
            ("Base", base.get("source") and f"`{base['source']}`"), ("Dimensions", base.get("hidden_size")),
            ("Pooling", manifest.get("pooling")),
            ("Trained on", training.get("data")),
            ("Training", result.get("steps") and f"{result['steps']:,} steps in {result.get('seconds', 0) / 60:.0f} min"),
            *[(f"Words named ({name})", _word_metrics(metrics[name])) for name in ("test", "test, hubness-corrected")
              if name in metrics],
            ("Word vectors", manifest.get("word_vectors") and f"{manifest['word_vectors'].get('words', 0):,} words"),
            ("Hubness correction", manifest.get("hub_penalty") and
             f"weight {manifest['hub_penalty'].get('weight')}, {manifest['hub_penalty'].get('k')} nearest definitions"),
            ("Software", ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items()))]
    return "\n".join(f"- **{label}:** {escape(str(value))}" for label, value in rows if value)


def _word_metrics(metrics: dict) -> str:
    """"MRR 0.218, top-1 13.5 %, top-10 38.0 % of 4,490 definitions"."""
    return (f"MRR {metrics.get('mrr', 0):.3f}, top-1 {metrics.get('top1', 0):.1%}, "
            f"top-10 {metrics.get('top10', 0):.1%} of {metrics.get('n', 0):,} definitions")

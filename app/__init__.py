"""DefSent Studio's web app, in wings that follow a request (docs/architecture.md): `server/` (what stands between a
client and the handlers), `handlers/` (plain methods over the engine, one class per tab), `shared/` (the models,
jobs, fine-tunes and downloads every session shares), `views/` (HTML, figures, projections); `tabs/` lays each tab
out, and `ui.py` (with `wiring.py`) assembles them; `launch.py` serves it.

Gradio is imported only by `ui.py`, `wiring.py`, `tabs/` and `server/gate.py`; the rest is plain Python over `core`,
unit-tested without a browser.
"""

"""DefSent Studio's web app: engine-level helpers (no gradio) plus the Gradio wiring in `app.ui`.

Only `app.ui` imports gradio; every other module here is plain Python over `core` and is unit-tested
without a browser.
"""

"""One module per tab: each `create(...)` lays its tab out and wires its events to `Studio`
(app/handlers.py); app/ui.py puts them together."""

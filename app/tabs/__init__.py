"""One module per tab: each `create(...)` lays its tab out and wires its events to the tab's handlers,
in the module of the same name in app/handlers/ (`studio.map` for map.py, ...); app/ui.py puts them together."""

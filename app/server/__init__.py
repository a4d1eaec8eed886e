"""Between a client and the handlers: queue shares and cancels, request limits, public mode, request work."""

"""Shared by every session: the models, background jobs and fine-tunes, downloads, evaluation, engine helpers."""

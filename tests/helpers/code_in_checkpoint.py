"""Checkpoints whose saved config text runs code if anything executes it.

mmengine saves the run's config as Python text in ``meta['cfg']`` (mmcv 1.x
scripts in ``meta['config']``); such a field is a plain string, so torch's
weights-only loader accepts it. A tool that ran it (``Config.fromstring``)
would create the marker file.
"""
from pathlib import Path


def code_that_touches(marker: Path) -> str:
    """A config line that, run, creates ``marker``."""
    return f"_x = __import__('os').system('touch {marker}')\n"


def with_code_in_saved_config(checkpoint: dict, marker: Path) -> dict:
    """``checkpoint`` with :func:`code_that_touches` ``marker`` heading its saved config texts."""
    meta = dict(checkpoint.get('meta') or {})
    for key in ('cfg', 'config'):
        meta[key] = code_that_touches(marker) + str(meta.get(key, ''))
    return dict(checkpoint, meta=meta)

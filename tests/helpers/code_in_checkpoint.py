"""Checkpoints whose saved config text runs code if anything executes it.

mmengine saves the run's config as Python text in ``meta['cfg']`` (mmcv 1.x
scripts in ``meta['config']``); such a field is a plain string, so torch's
weights-only loader accepts it. A tool that ran it (``Config.fromstring``)
would create the marker file. A pickle payload (:func:`save_pickle_payload`)
creates it as soon as anything unpickles the file without torch's weights-only
safety.
"""
import os
from pathlib import Path

import torch


def code_that_touches(marker: Path) -> str:
    """A config line that, run, creates ``marker``."""
    return f"_x = __import__('os').system('touch {marker}')\n"


def with_code_in_saved_config(checkpoint: dict, marker: Path) -> dict:
    """``checkpoint`` with :func:`code_that_touches` ``marker`` heading its saved config texts."""
    meta = dict(checkpoint.get('meta') or {})
    for key in ('cfg', 'config'):
        meta[key] = code_that_touches(marker) + str(meta.get(key, ''))
    return dict(checkpoint, meta=meta)


class RunsWhenUnpickled:
    """Unpickles as ``os.system('touch MARKER')``: what a booby-trapped checkpoint carries."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f'touch {self.marker}',)


def save_pickle_payload(path: Path, marker: Path) -> Path:
    """Save at ``path`` a checkpoint (weights and all) whose unpickling creates ``marker``."""
    torch.save({'state_dict': {'weight': torch.ones(1)}, 'meta': RunsWhenUnpickled(marker)}, path)
    return path

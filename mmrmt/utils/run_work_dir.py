"""The work dir side of tools/train.py: a new training run overwrites no earlier one (checked
before anything is built)."""
import glob
import os.path as osp
from typing import Optional

from mmrmt.checkpoint import is_remote
from mmrmt.engine.own_checkpoint import checkpoint_folder
from .preflight import PreflightError


def check_no_earlier_run(work_dir: str, out_dir: Optional[str] = None) -> None:
    """Fail if ``work_dir`` holds the checkpoints of an earlier run, which a new run would
    overwrite and mix with its own (mmengine writes over ``iter_N.pth`` and ``last_checkpoint``).

    Args:
        work_dir (str): The work dir of a run that does not resume.
        out_dir (str, optional): Its CheckpointHook's ``out_dir``.

    Raises:
        PreflightError: Naming ``--resume`` and ``--work-dir``.
    """
    record = osp.join(work_dir, 'last_checkpoint')
    folder = checkpoint_folder(work_dir, out_dir)
    checkpoints = [] if is_remote(folder) else sorted(glob.glob(osp.join(glob.escape(folder), '*.pth')))
    if not (osp.isfile(record) or checkpoints):
        return
    held = f'{record}' if osp.isfile(record) else f'{checkpoints[0]}' + (
        f' and {len(checkpoints) - 1} more checkpoints' if len(checkpoints) > 1 else '')
    raise PreflightError(f'work dir {work_dir} holds an earlier run ({held}), which this run would overwrite: '
                         'add --resume to continue it, or choose another --work-dir')

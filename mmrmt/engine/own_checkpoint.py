"""Resume from a work dir's own checkpoints, not from those of the work dir it was copied from.

mmengine records absolute checkpoint paths in ``<work_dir>/last_checkpoint`` and in each checkpoint's message hub:
after ``cp -r wd wd2`` both name files in ``wd``, so resuming ``wd2`` would load ``wd``'s checkpoint and a new best
one would delete ``wd``'s. Here such paths are moved into the run's own checkpoint folder (same file name).
"""
import glob
import os.path as osp
import posixpath
from typing import Optional, Tuple

from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.runner import find_latest_checkpoint

from mmrmt.checkpoint import is_remote

CHECKPOINT_PATH_KEYS = ('last_ckpt', 'best_ckpt')


class ForeignCheckpointError(ValueError):
    """``last_checkpoint`` names another folder's checkpoint, absent from the run's own."""


def checkpoint_out_dir(cfg: Config) -> Optional[str]:
    """The ``out_dir`` of the config's CheckpointHook (None: the work dir)."""
    hook = (cfg.get('default_hooks') or {}).get('checkpoint')
    return hook.get('out_dir') if isinstance(hook, dict) else None


def checkpoint_folder(work_dir: str, out_dir: Optional[str] = None) -> str:
    """Where CheckpointHook saves the run's checkpoints: the work dir, or ``<out_dir>/<work dir's name>``."""
    work_dir = osp.abspath(work_dir)
    if out_dir is None:
        return work_dir
    return posixpath.join(out_dir if is_remote(out_dir) else osp.abspath(out_dir), osp.basename(work_dir))


def earlier_run_problem(work_dir: str, out_dir: Optional[str] = None) -> Optional[str]:
    """Why a run that does not resume may not train in ``work_dir`` (``out_dir``: its CheckpointHook's): the folder
    holds an earlier run's checkpoints (``*.pth``, ``last_checkpoint``), which mmengine would overwrite; None if
    it holds none."""
    record = osp.join(work_dir, 'last_checkpoint')
    folder = checkpoint_folder(work_dir, out_dir)
    checkpoints = [] if is_remote(folder) else sorted(glob.glob(osp.join(glob.escape(folder), '*.pth')))
    if not (osp.isfile(record) or checkpoints):
        return None
    held = record if osp.isfile(record) else checkpoints[0] + (
        f' and {len(checkpoints) - 1} more checkpoints' if len(checkpoints) > 1 else '')
    return (f'work dir {work_dir} holds an earlier run ({held}), which this run would overwrite: add --resume to '
            'continue it, or choose another --work-dir')


def is_inside(path: str, folder: str) -> bool:
    """Whether file ``path`` lies directly in ``folder`` (links resolved, for local paths)."""
    if is_remote(path) or is_remote(folder):
        return posixpath.dirname(path) == folder.rstrip('/')
    return osp.realpath(osp.dirname(osp.abspath(path))) == osp.realpath(folder)


def own_last_checkpoint(work_dir: str, out_dir: Optional[str] = None) -> Tuple[Optional[str], Optional[str]]:
    """The checkpoint ``work_dir``'s ``last_checkpoint`` names (None without one), moved into the run's
    :func:`checkpoint_folder` when it lies elsewhere, and then a line saying so for the log (else None).

    Raises:
        ForeignCheckpointError: The recorded path lies elsewhere and the run's folder has no such file.
    """
    recorded = find_latest_checkpoint(work_dir)
    folder = checkpoint_folder(work_dir, out_dir)
    if recorded is None or is_inside(recorded, folder):
        return recorded, None
    record_file = osp.join(osp.abspath(work_dir), 'last_checkpoint')
    own = posixpath.join(folder, posixpath.basename(recorded))  # the same file name in the run's folder
    if not (is_remote(own) or osp.isfile(own)):
        raise ForeignCheckpointError(
            f'{record_file} names {recorded}, a checkpoint outside this run\'s folder {folder} (a copied or moved '
            f'work dir?), and {own} does not exist: resume from a checkpoint of this work dir by naming it '
            f'(--resume CKPT), or delete {record_file} to train from scratch')
    return own, (f'{record_file} names {recorded}, outside this run\'s folder {folder} (a '
                 f'copied or moved work dir?): resuming from {own} instead')


def keep_checkpoint_paths_own(message_hub: MessageHub, folder: str) -> None:
    """Move a resumed message hub's checkpoint paths into ``folder`` (CheckpointHook deletes the old best one)."""
    for key, value in list(message_hub.runtime_info.items()):
        if key.startswith(CHECKPOINT_PATH_KEYS) and isinstance(value, str) and not is_inside(value, folder):
            message_hub.update_info(key, posixpath.join(folder, posixpath.basename(value)))

"""The work dir side of tools/train.py and tools/test.py: the runner that keeps to
its work dir, and a check, before anything is built, that no other run holds it."""
from mmengine.config import Config

from mmrmt.engine import WorkDirBusyError, check_work_dir_free
from .preflight import PreflightError


def use_own_work_dir_runner(cfg: Config) -> None:
    """Build the run with :class:`~mmrmt.engine.OwnWorkDirRunner` unless the config names
    a runner (mmrmt's configs name this one in ``configs/_base_/mmrmt_runtime.py``)."""
    if 'runner_type' not in cfg:
        cfg.runner_type = 'OwnWorkDirRunner'


def check_work_dir_unused(work_dir: str) -> None:
    """Fail if a live run holds ``work_dir``'s lock (the runner takes it later; this
    check reports a busy work dir before the other checks read its files).

    Raises:
        PreflightError: Naming the running run.
    """
    try:
        check_work_dir_free(work_dir)
    except WorkDirBusyError as error:
        raise PreflightError(str(error)) from error

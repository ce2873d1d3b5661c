"""``Runner.from_cfg`` honouring a config's ``runner_type='OwnWorkDirRunner'``.

mmdet's ``tools/train.py`` and ``tools/test.py`` and mmseg's ``tools/train.py``
build the config's ``runner_type`` through mmengine's ``RUNNERS``; mmseg's
``tools/test.py`` calls ``Runner.from_cfg(cfg)`` whatever the config names.
Its run would then get mmengine's plain Runner, which makes the work dir and
its log before the checkpoint is read (a missing or code-carrying file then
leaves them behind), and shares the work dir with any other run.
:func:`honour_own_runner_type` (called when :mod:`mmrmt.engine` is imported,
as every mmrmt config's ``custom_imports`` does) makes ``Runner.from_cfg``
build :class:`~mmrmt.engine.OwnWorkDirRunner` (or a subclass a config names)
when it is called on mmengine's Runner itself with such a config; every other
call is mmengine's own.
"""
from mmengine.config import Config
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from .own_work_dir_runner import OwnWorkDirRunner

#: mmengine's own ``Runner.from_cfg`` (the function under the classmethod).
_MMENGINE_FROM_CFG = Runner.from_cfg.__func__


def runner_class_named(cfg: Config) -> type:
    """The runner class ``cfg`` asks for: its ``runner_type`` when that is
    :class:`~mmrmt.engine.OwnWorkDirRunner` or a subclass, else mmengine's Runner.

    Args:
        cfg (Config): A run's config.
    """
    name = cfg.get('runner_type')
    runner_class = RUNNERS.get(name) if isinstance(name, str) else name
    if isinstance(runner_class, type) and issubclass(runner_class, OwnWorkDirRunner):
        return runner_class
    return Runner


def _from_cfg(cls: type, cfg: Config) -> Runner:
    """mmengine's ``Runner.from_cfg``, building the config's own runner when called on Runner."""
    if cls is Runner:
        cls = runner_class_named(cfg)
    return _MMENGINE_FROM_CFG(cls, cfg)


def honour_own_runner_type() -> None:
    """Make ``Runner.from_cfg(cfg)`` build the ``runner_type`` of an mmrmt config (idempotent)."""
    Runner.from_cfg = classmethod(_from_cfg)

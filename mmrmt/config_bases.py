"""``mmrmt::`` config bases: ``_base_ = 'mmrmt::rmt/retinanet_rmt-t_fpn_1x_coco.py'``.

mmengine resolves a ``package::path`` base only for the OpenMMLab libraries
it knows (``MODULE2PACKAGE``), and only inside ``<package>/.mim/configs``,
which an editable install does not have. Importing mmrmt calls
:func:`enable_mmrmt_bases`, which puts one check in front of mmengine's
lookup of a base's path (``Config._get_cfg_path``): a base starting with
``mmrmt::`` is read from :func:`zoo_configs_dir` (and must name one of its
configs), every other base goes to mmengine's own lookup. An ``mmrmt::`` base is read as if named by its path (no
``_scope_`` is added: each of our configs sets its ``default_scope``).

A config read before mmrmt is imported cannot use it: mmdet's and mmseg's
own ``tools/train.py`` read the config before its ``custom_imports``. There,
name the base by its path (docs/get_started.md).
"""
from pathlib import Path
from typing import Callable, Optional, Tuple

from mmengine.config import Config

PREFIX = 'mmrmt::'

#: A file every config folder of mmrmt holds (tells it from another ``configs``).
MARKER = Path('_base_') / 'mmrmt_runtime.py'


def zoo_configs_dir() -> Path:
    """The folder of mmrmt's configs: ``mmrmt/.mim/configs`` of an installed
    wheel, else the repository's ``configs/`` (editable install or checkout).

    Raises:
        FileNotFoundError: Neither holds mmrmt's configs.
    """
    package = Path(__file__).resolve().parent
    candidates = (package / '.mim' / 'configs', package.parent / 'configs')
    for candidate in candidates:
        if (candidate / MARKER).is_file():
            return candidate
    raise FileNotFoundError(f"mmrmt's configs are in neither {candidates[0]} nor {candidates[1]}: "
                            'reinstall mmrmt (pip install a built wheel, or pip install -e . in a clone)')


def zoo_base_path(base: str) -> str:
    """The file an ``mmrmt::FOLDER/NAME.py`` base names.

    Raises:
        FileNotFoundError: No config of mmrmt has that name.
    """
    relative = base[len(PREFIX):]
    root = zoo_configs_dir()
    path = (root / relative).resolve()
    if not relative.endswith('.py') or not path.is_file() or not path.is_relative_to(root.resolve()):
        raise FileNotFoundError(f"base {base!r}: mmrmt has no config {relative!r} (in {root}); name one "
                                f"as {PREFIX}FOLDER/NAME.py, e.g. {PREFIX}rmt/retinanet_rmt-t_fpn_1x_coco.py")
    return str(path)


def enable_mmrmt_bases() -> None:
    """Let mmengine's ``Config`` read ``mmrmt::`` bases (idempotent)."""
    mmengine_lookup: Callable[[str, str], Tuple[str, Optional[str]]] = Config._get_cfg_path
    if getattr(mmengine_lookup, 'reads_mmrmt_bases', False):
        return

    def get_cfg_path(cfg_path: str, filename: str) -> Tuple[str, Optional[str]]:
        if cfg_path.startswith(PREFIX):
            return zoo_base_path(cfg_path), None
        return mmengine_lookup(cfg_path, filename)

    get_cfg_path.reads_mmrmt_bases = True  # type: ignore[attr-defined]
    Config._get_cfg_path = staticmethod(get_cfg_path)

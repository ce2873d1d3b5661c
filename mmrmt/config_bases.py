"""``mmrmt::`` config bases: ``_base_ = 'mmrmt::rmt/retinanet_rmt-t_fpn_1x_coco.py'``.

mmengine resolves a ``package::path`` base only for the OpenMMLab libraries
it knows (``MODULE2PACKAGE``), and only inside ``<package>/.mim/configs``,
which an editable install does not have. Importing mmrmt calls
:func:`enable_mmrmt_bases`, which puts one check in front of mmengine's
lookup of a base's path (``Config._get_cfg_path``): a base starting with
``mmrmt::`` is read from :func:`zoo_configs_dir`, every other base goes to
mmengine's own lookup, once per base and process: mmengine's finds a
``mmdet::``/``mmseg::`` base by reloading ``pkg_resources`` and reading the
package's metafiles (about a second a lookup, repeated for every config that
inherits it), and where an installed package keeps a file does not change
while a process runs. An ``mmrmt::`` base is read as if named by its path (no
``_scope_`` is added: each of our configs sets its ``default_scope``).

mmengine also looks a ``mmseg::`` base up under the distribution
``mmsegmentation``; the maintained forks install the module ``mmseg`` as
``onedl-mmsegmentation``, so :func:`find_libraries_under_fork_names` lets
mmengine find such a library by its module instead.

A config read before mmrmt is imported cannot use it: mmdet's and mmseg's
own ``tools/train.py`` read the config before its ``custom_imports``. There,
name the base by its path (docs/get_started.md).
"""
from functools import lru_cache
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Callable, Optional, Tuple

from mmengine.config import Config
from mmengine.config.utils import MODULE2PACKAGE

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
    path = root / relative
    if not relative.endswith('.py') or not path.is_file():
        raise FileNotFoundError(f"base {base!r}: mmrmt has no config {relative!r} (in {root}); name one "
                                f"as {PREFIX}FOLDER/NAME.py, e.g. {PREFIX}rmt/retinanet_rmt-t_fpn_1x_coco.py")
    return str(path)


def distribution_installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def find_libraries_under_fork_names() -> None:
    """Let mmengine find a ``package::`` base of a library whose module is installed under
    another distribution name than mmengine expects (the onedl forks: module ``mmseg``,
    distribution ``onedl-mmsegmentation``, not ``mmsegmentation``).

    mmengine's ``MODULE2PACKAGE`` maps such a module to its distribution name, which it
    then looks up as an installed distribution or, failing that, as a module: the
    module's own name is given instead, so the module's folder is found.
    """
    for module, package in list(MODULE2PACKAGE.items()):
        if module != package and not distribution_installed(package) and find_spec(module) is not None:
            MODULE2PACKAGE[module] = module


def enable_mmrmt_bases() -> None:
    """Let mmengine's ``Config`` read ``mmrmt::`` bases, and the bases of libraries
    installed under the forks' distribution names (idempotent)."""
    find_libraries_under_fork_names()
    mmengine_lookup: Callable[[str, str], Tuple[str, Optional[str]]] = Config._get_cfg_path
    if getattr(mmengine_lookup, 'reads_mmrmt_bases', False):
        return

    @lru_cache(maxsize=None)
    def package_base_path(cfg_path: str) -> Tuple[str, Optional[str]]:
        return mmengine_lookup(cfg_path, '')  # a package's base does not depend on the file naming it

    def get_cfg_path(cfg_path: str, filename: str) -> Tuple[str, Optional[str]]:
        if cfg_path.startswith(PREFIX):
            return zoo_base_path(cfg_path), None
        if '::' in cfg_path:
            return package_base_path(cfg_path)
        return mmengine_lookup(cfg_path, filename)

    get_cfg_path.reads_mmrmt_bases = True  # type: ignore[attr-defined]
    Config._get_cfg_path = staticmethod(get_cfg_path)

"""The fixes of named upstream bugs that mmrmt's promises need: the only changes ``import mmrmt`` makes to
mmengine and mmseg beyond registering (see :mod:`mmrmt.openmmlab_layer`). Each entry of :data:`UPSTREAM_FIXES`
names the bug, the versions it applies to and what it replaces; ``MMRMT_UPSTREAM_FIXES_OFF`` (names separated
by commas, or ``all``), read when a fix would be applied, leaves upstream's code as it is, with its bug.
docs/design.md lists them.
"""
import functools
import os
import os.path as osp
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Dict, Optional, Tuple

from mmrmt.checkpoint import (is_remote, is_safetensors_name, is_url, load_weights_only, make_resumed_config_inert,
                              read_checkpoint)
from .openmmlab_stack import installed

#: The environment variable naming the fixes a user turns off (comma-separated, or ``all``).
OFF_VARIABLE = 'MMRMT_UPSTREAM_FIXES_OFF'


@dataclass(frozen=True)
class UpstreamFix:
    """One fix: the upstream bug, where it applies, what replaces what, and how it is applied."""
    bug: str
    versions: str
    replaces: str
    apply: Callable[[], None]


def load_from_local_weights_only(filename: str, map_location: object = None) -> object:
    """mmengine's loader of local paths (scheme ``''``), loading through :func:`load_weights_only`.

    Raises:
        FileNotFoundError: No such file (mmengine's own message).
        CheckpointRefusedError: The file holds more than weights.
    """
    filename = osp.expanduser(filename)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'{filename} can not be found.')
    return load_weights_only(filename, map_location)


def load_mmengine_checkpoints_weights_only() -> None:
    """Replace mmengine's loader of local paths and, on onedl-mmengine, its ``_safe_torch_load``
    (which the loaders of the other schemes call) by weights-only loads (idempotent)."""
    from mmengine.runner import checkpoint
    if hasattr(checkpoint, '_safe_torch_load'):
        checkpoint._safe_torch_load = load_weights_only
    loader = checkpoint.CheckpointLoader._schemes.get('')
    if getattr(loader, '__wrapped__', loader) is not load_from_local_weights_only:
        checkpoint.CheckpointLoader.register_scheme('', load_from_local_weights_only, force=True)


def make_checkpoint_inert(checkpoint: object) -> object:
    """``checkpoint`` with ``meta['config']`` made plain data when it is an mmengine checkpoint."""
    if isinstance(checkpoint, dict):
        make_resumed_config_inert(checkpoint)
    return checkpoint


def inert_loader(loader: Callable) -> Callable:
    """``loader`` whose checkpoints hold no code in ``meta['config']`` (same name, for mmengine's log);
    a ``.safetensors`` file or URL read by :func:`~mmrmt.checkpoint.read_checkpoint`."""

    @functools.wraps(loader)
    def load(filename, *args, **kwargs):
        readable = isinstance(filename, str) and (is_url(filename) or not is_remote(filename))
        if readable and is_safetensors_name(filename):
            return read_checkpoint(filename)
        return make_checkpoint_inert(loader(filename, *args, **kwargs))

    load.makes_resumed_config_inert = True
    return load


def make_resumed_configs_inert() -> None:
    """Wrap every loader of mmengine's ``CheckpointLoader`` in :func:`inert_loader` (idempotent).

    Loaders registered later (by a user's module) are not wrapped; for them
    :class:`~mmrmt.engine.OwnWorkDirRunner` makes the checkpoint inert itself.
    """
    from mmengine.runner.checkpoint import CheckpointLoader
    for prefix, loader in list(CheckpointLoader._schemes.items()):
        if not getattr(loader, 'makes_resumed_config_inert', False):
            CheckpointLoader.register_scheme(prefix, inert_loader(loader), force=True)


def distribution_installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def find_libraries_under_fork_names() -> None:
    """Let mmengine find a ``package::`` base of a library whose module is installed under another
    distribution name than mmengine expects (module ``mmseg``, distribution ``onedl-mmsegmentation``):
    ``MODULE2PACKAGE`` then gives the module's own name, which mmengine finds as a module."""
    from mmengine.config.utils import MODULE2PACKAGE
    for module, package in list(MODULE2PACKAGE.items()):
        if module != package and not distribution_installed(package) and installed(module):
            MODULE2PACKAGE[module] = module


def cache_package_base_lookups() -> None:
    """Make ``Config._get_cfg_path`` look each ``package::`` base up once per process (idempotent):
    where an installed package keeps a file does not change while a process runs."""
    from mmengine.config import Config
    lookup: Callable[[str, str], Tuple[str, Optional[str]]] = Config._get_cfg_path
    if getattr(lookup, 'caches_package_bases', False):
        return

    @functools.lru_cache(maxsize=None)
    def package_base_path(cfg_path: str) -> Tuple[str, Optional[str]]:
        return lookup(cfg_path, '')  # a package's base does not depend on the file naming it

    def get_cfg_path(cfg_path: str, filename: str) -> Tuple[str, Optional[str]]:
        return package_base_path(cfg_path) if '::' in cfg_path else lookup(cfg_path, filename)

    get_cfg_path.caches_package_bases = True
    get_cfg_path.reads_mmrmt_bases = getattr(lookup, 'reads_mmrmt_bases', False)
    Config._get_cfg_path = staticmethod(get_cfg_path)


def runner_class_named(cfg: dict) -> type:
    """The runner class ``cfg`` asks for: its ``runner_type`` when that class is marked
    ``honoured_by_from_cfg`` (:class:`~mmrmt.engine.OwnWorkDirRunner` and its subclasses), else
    mmengine's Runner."""
    from mmengine.registry import RUNNERS
    from mmengine.runner import Runner
    name = cfg.get('runner_type')
    runner_class = RUNNERS.get(name) if isinstance(name, str) else name
    return runner_class if getattr(runner_class, 'honoured_by_from_cfg', False) else Runner


def honour_own_runner_type() -> None:
    """Make ``Runner.from_cfg(cfg)``, called on mmengine's Runner itself, build the config's
    ``runner_type`` when that is mmrmt's runner; every other call stays mmengine's own (idempotent)."""
    from mmengine.runner import Runner
    mmengine_from_cfg = Runner.from_cfg.__func__
    if getattr(mmengine_from_cfg, 'honours_own_runner_type', False):
        return

    def from_cfg(cls: type, cfg: dict) -> object:
        return mmengine_from_cfg(runner_class_named(cfg) if cls is Runner else cls, cfg)

    from_cfg.honours_own_runner_type = True
    Runner.from_cfg = classmethod(from_cfg)


#: Every fix, by the name a user turns it off with.
UPSTREAM_FIXES: Dict[str, UpstreamFix] = {
    'weights-only-loading': UpstreamFix(
        bug="onedl-mmengine's _safe_torch_load retries a refused weights-only load with weights_only=False, "
            "running the file's code; upstream mmengine's local loader under torch >= 2.6 refuses the "
            'HistoryBuffer its own checkpoints hold (--resume fails)',
        versions='onedl-mmengine 0.10.8 and later; mmengine 0.10.x with torch >= 2.6',
        replaces="mmengine.runner.checkpoint: CheckpointLoader's '' scheme and _safe_torch_load",
        apply=load_mmengine_checkpoints_weights_only),
    'inert-resumed-config': UpstreamFix(
        bug="Runner.resume runs the Python text of a checkpoint's meta['config'] (Config.fromstring)",
        versions='mmengine 0.10.0-0.10.7, onedl-mmengine 0.10.8-0.10.12',
        replaces="every loader of mmengine.runner.checkpoint.CheckpointLoader, wrapped: meta['config'] "
                 'replaced by its plain-data reading, .safetensors read by mmrmt',
        apply=make_resumed_configs_inert),
    'honoured-runner-type': UpstreamFix(
        bug="mmseg's tools/test.py calls Runner.from_cfg(cfg) whatever the config's runner_type",
        versions='mmsegmentation 1.2.x, onedl-mmsegmentation 1.4.x',
        replaces='mmengine.runner.Runner.from_cfg (when called on Runner with an OwnWorkDirRunner config)',
        apply=honour_own_runner_type),
    'fork-distribution-names': UpstreamFix(
        bug="mmengine looks a mmseg:: base up under the distribution 'mmsegmentation', which the onedl "
            'forks name onedl-mmsegmentation',
        versions='mmengine 0.10.x with onedl-mmsegmentation',
        replaces='entries of mmengine.config.utils.MODULE2PACKAGE whose distribution is absent',
        apply=find_libraries_under_fork_names),
    'cached-package-bases': UpstreamFix(
        bug="Config._get_cfg_path reloads pkg_resources and a package's metafiles for every package:: "
            'base (about a second a lookup)',
        versions='mmengine 0.10.x',
        replaces='mmengine.config.Config._get_cfg_path, for package:: bases',
        apply=cache_package_base_lookups),
}


def turned_off() -> set:
    """The names ``MMRMT_UPSTREAM_FIXES_OFF`` turns off (every name for ``all``)."""
    names = {name.strip() for name in os.environ.get(OFF_VARIABLE, '').split(',') if name.strip()}
    return set(UPSTREAM_FIXES) if 'all' in names else names


def apply_upstream_fixes(*names: str) -> None:
    """Apply the fixes ``names`` (each idempotent), but those the user turned off.

    Raises:
        ValueError: ``MMRMT_UPSTREAM_FIXES_OFF`` names no fix (one line naming the fixes).
    """
    off = turned_off()
    unknown = off - set(UPSTREAM_FIXES)
    if unknown:
        raise ValueError(f'{OFF_VARIABLE} names no fix {sorted(unknown)}: give names of '
                         f'{sorted(UPSTREAM_FIXES)} separated by commas, or all')
    for name in names:  # in order: the inert wrap goes over the weights-only local loader
        if name not in off:
            UPSTREAM_FIXES[name].apply()

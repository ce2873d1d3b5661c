"""A fresh virtual environment that already has mmrmt's core packages, for install tests.

Installing torch (gigabytes) into every test environment would take too long,
so the fresh environment borrows the core packages of the running one: a
folder of links to each core distribution and everything it requires
(modules and ``*.dist-info``), put on the fresh environment's path by a
``.pth`` file. pip's resolver sees them as installed; whatever else an
install asks for (mmdet, mmsegmentation and their requirements) comes from
the package index into the fresh environment. pip never changes the borrowed
packages: they lie outside the fresh environment, and the install is pinned
to their versions by requirements/constraints.txt.
"""
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Dict, FrozenSet, List, Tuple

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: What every mmrmt install needs (requirements/runtime.txt) but mmcv and mmengine,
#: and setuptools, which a fresh environment has and mmengine's config lookup imports.
SHARED_CORE = ('torch', 'torchvision', 'timm', 'setuptools')
#: Each OpenMMLab family's distributions: the prefix of its extras ('' upstream),
#: its mmcv and mmengine (the rest of the core) and its det / seg libraries.
FAMILIES = {
    'openmmlab': dict(extras='', core=('mmcv', 'mmengine'), det='mmdet', seg='mmsegmentation'),
    'onedl': dict(extras='onedl-', core=('onedl-mmcv', 'onedl-mmengine'), det='onedl-mmdetection',
                  seg='onedl-mmsegmentation'),
}


def running_family() -> str:
    """The OpenMMLab family of the running environment: 'onedl' for the maintained forks,
    else 'openmmlab'."""
    try:
        metadata.distribution('onedl-mmengine')
    except metadata.PackageNotFoundError:
        return 'openmmlab'
    return 'onedl'


def required_distributions(roots: Tuple[str, ...]) -> List[metadata.Distribution]:
    """``roots`` and every distribution they require, with the extras they ask for."""
    found: Dict[str, metadata.Distribution] = {}
    wanted_extras: Dict[str, FrozenSet[str]] = {}
    queue = [(name, frozenset()) for name in roots]
    while queue:
        name, extras = queue.pop()
        key = canonicalize_name(name)
        if key in found and extras <= wanted_extras[key]:
            continue
        wanted_extras[key] = wanted_extras.get(key, frozenset()) | extras
        found[key] = distribution = metadata.distribution(name)
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or any(requirement.marker.evaluate({'extra': extra})
                                                 for extra in ('', *wanted_extras[key])):
                queue.append((requirement.name, frozenset(requirement.extras)))
    return list(found.values())


def link_distributions(distributions: List[metadata.Distribution], folder: Path) -> None:
    """Link the top-level files and folders of each distribution (its modules and
    its ``*.dist-info``) into ``folder``."""
    folder.mkdir()
    for distribution in distributions:
        location = Path(distribution.locate_file(''))
        for top in sorted({Path(file).parts[0] for file in distribution.files or []}):
            link, target = folder / top, location / top
            if top not in ('..', '__pycache__') and target.exists() and not link.exists():
                link.symlink_to(target)


def core_environment(root: Path, openmmlab: bool = True) -> Path:
    """A fresh virtual environment in ``root/venv`` seeing only the core of this one
    (:data:`SHARED_CORE` and, with ``openmmlab``, the running family's mmcv and mmengine, linked in
    ``root/core``); return its Python."""
    venv = root / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True)
    core = SHARED_CORE + (FAMILIES[running_family()]['core'] if openmmlab else ())
    link_distributions(required_distributions(core), root / 'core')
    python = venv / 'bin' / 'python'
    site_packages = subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'],
                                   capture_output=True, text=True, check=True).stdout.strip()
    (Path(site_packages) / 'core_packages.pth').write_text(f'{root / "core"}\n')
    return python

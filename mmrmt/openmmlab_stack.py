"""The OpenMMLab stack under mmrmt's OpenMMLab layer: whether it is installed, and its versions.

mmrmt runs on either family: upstream OpenMMLab (distributions mmcv,
mmengine, mmdet, mmsegmentation) or its maintained forks (onedl-mmcv,
onedl-mmengine, onedl-mmdetection, onedl-mmsegmentation), which install the
same modules. Its install therefore names neither family's mmcv and mmengine
unconditionally (see setup.py): the modules' versions are checked here, so a
missing or unsupported one is one line naming what to install, for either
family, instead of an error from deep inside an import.
"""
import re
from importlib import import_module
from importlib.util import find_spec
from typing import Dict, List, Tuple

#: The libraries the backbones serve; the OpenMMLab layer comes in where one is installed.
LIBRARIES = ('mmdet', 'mmseg')

#: module -> (the lowest version supported, the first one that is not); the
#: forks' releases lie in these ranges too (onedl-mmcv 2.3, onedl-mmengine 0.10.12).
SUPPORTED_VERSIONS: Dict[str, Tuple[str, str]] = {
    'mmengine': ('0.10.0', '1.0.0'),
    'mmcv': ('2.1.0', '2.4.0'),
}

#: How to install either family with mmrmt (setup.py's extras).
INSTALL_EITHER_FAMILY = ('install either family: pip install "mmrmt[det]" (or [seg], [all]: upstream OpenMMLab) '
                         'or "mmrmt[onedl-det]" (or [onedl-seg], [onedl-all]: the maintained onedl forks); '
                         'see docs/get_started.md')


def installed(module: str) -> bool:
    """Whether ``module`` is installed and its import is not blocked (``sys.modules[module] = None``)."""
    try:
        return find_spec(module) is not None
    except ValueError:  # a blocked module has no spec
        return False


def installed_libraries() -> List[str]:
    """The modules of :data:`LIBRARIES` that are installed."""
    return [library for library in LIBRARIES if installed(library)]


def release(version: str) -> Tuple[int, ...]:
    """The release numbers of ``version`` ('2.3.6' -> (2, 3, 6); '0.10.8rc1' -> (0, 10, 8))."""
    return tuple(int(number) for number in re.findall(r'\d+', version.split('+')[0])[:3])


def check_openmmlab_stack() -> None:
    """Check that mmcv and mmengine import, in the versions of :data:`SUPPORTED_VERSIONS`.

    Raises:
        ImportError: One is missing or of another version; the message (one
            line) names the module, the versions supported and how to install them.
    """
    for name, (lowest, beyond) in SUPPORTED_VERSIONS.items():
        wanted = f'mmrmt needs {name} >={lowest},<{beyond}'
        try:
            version = import_module(name).__version__
        except ImportError as error:
            raise ImportError(f'{wanted}, which is not installed: {INSTALL_EITHER_FAMILY}') from error
        if not release(lowest) <= release(version) < release(beyond):
            raise ImportError(f'{wanted}, not {version}: {INSTALL_EITHER_FAMILY}')

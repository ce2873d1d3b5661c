"""Install mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

The core (torch>=2.7.1, torchvision>=0.22.1, timm; ``requirements/runtime.txt``:
the torch floor ``make test-floor`` checks) always; the
OpenMMLab family and the library the backbones serve as an extra, so that
either library is enough and an environment holding the maintained forks
(onedl-mmcv, onedl-mmengine, ...: the same modules under other distribution
names) is never given upstream's distributions over them (mmrmt is not on
PyPI yet: from a clone, or from a wheel built by ``pip wheel . --no-deps``)::

    pip install -e ".[det]"         # upstream OpenMMLab: mmcv, mmengine, mmdet
    pip install -e ".[seg]"         # ... mmcv, mmengine, mmsegmentation
    pip install -e ".[all]"         # ... both (what ``make setup`` installs)
    pip install -e ".[onedl-det]"   # the forks: onedl-mmcv, onedl-mmengine, onedl-mmdetection
    pip install -e ".[onedl-seg]"   # ... onedl-mmsegmentation
    pip install -e ".[onedl-all]"   # ... both (what ``make test-forks`` installs)
    pip install -e .                # a stack already installed: nothing of it changed

plus ``[deploy]`` (ONNX export), ``[openvino]`` (OpenVINO) and ``[tests]``.
``import mmrmt`` checks the versions of the mmcv and mmengine modules, from
whichever family (:mod:`mmrmt.openmmlab_stack`). torch and mmcv (with its
compiled ops) are best installed first (see ``tools/misc/setup_env.sh``).

A built wheel also carries the configs, tools, demo, docs and
``model-index.yml`` in ``mmrmt/.mim/`` (as mmdet's and mmseg's wheels do),
so that without a clone mim finds the model zoo (whose metafiles point at
docs/model_zoo.md) and configs inherit ours as ``mmrmt::rmt/...py``.
The files are copied into the build folder only: the source tree is left as
it is, and an editable install reads them where they are.
"""
import shutil
from pathlib import Path
from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent

#: Top-level files and folders shipped in ``mmrmt/.mim/``.
MIM_FILES = ('configs', 'demo', 'docs', 'tools', 'model-index.yml')


class BuildPyWithMim(build_py):
    """``build_py`` that also copies :data:`MIM_FILES` into ``mmrmt/.mim`` of the build."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        mim_dir = Path(self.build_lib) / 'mmrmt' / '.mim'
        for name in MIM_FILES:
            source, target = ROOT / name, mim_dir / name
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)


def read_version() -> str:
    namespace: dict = {}
    exec((ROOT / 'mmrmt' / 'version.py').read_text(), namespace)
    return namespace['__version__']


def read_requirements(name: str) -> list:
    lines = (ROOT / 'requirements' / name).read_text().splitlines()
    return [line for line in (raw.strip() for raw in lines) if line and not line.startswith('#')]


def family_extras(prefix: str, core: str, det: str, seg: str) -> dict:
    """One OpenMMLab family's extras ``{prefix}det``, ``{prefix}seg`` and ``{prefix}all``:
    its core (the requirements file ``core``) and its MMDetection, MMSegmentation or both."""
    core_requirements = read_requirements(core)
    det_requirements, seg_requirements = read_requirements(det), read_requirements(seg)
    return {
        f'{prefix}det': core_requirements + det_requirements,
        f'{prefix}seg': core_requirements + seg_requirements,
        f'{prefix}all': core_requirements + det_requirements + seg_requirements,
    }


setup(
    name='mmrmt',
    version=read_version(),
    description='RMT, ResT and ResMLP backbones for MMDetection 3.x and MMSegmentation 1.x',
    long_description=(ROOT / 'README.md').read_text() if (ROOT / 'README.md').exists() else '',
    long_description_content_type='text/markdown',
    packages=find_packages(include=['mmrmt', 'mmrmt.*']),
    python_requires='>=3.8',
    install_requires=read_requirements('runtime.txt'),
    extras_require={
        **family_extras('', 'mminstall.txt', det='det.txt', seg='seg.txt'),
        **family_extras('onedl-', 'onedl.txt', det='onedl_det.txt', seg='onedl_seg.txt'),
        'tests': read_requirements('tests.txt'),
        'mim': read_requirements('mminstall.txt'),
        'deploy': read_requirements('deploy.txt'),
        'openvino': read_requirements('openvino.txt'),
    },
    license='Apache License 2.0',
    license_files=['LICENSE'],
    zip_safe=False,
    cmdclass={'build_py': BuildPyWithMim},
)

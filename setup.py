"""Install mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

As OpenMMLab plugins declare it: the core (torch, mmcv, mmengine, timm;
``requirements/runtime.txt``) always, and the library the backbones serve as
an extra, so that either one is enough (mmrmt is not on PyPI yet: from a
clone, or from a wheel built by ``pip wheel . --no-deps``)::

    pip install -e ".[det]"   # with MMDetection
    pip install -e ".[seg]"   # with MMSegmentation
    pip install -e ".[all]"   # both (what ``make setup`` installs)

plus ``[deploy]`` (ONNX export), ``[openvino]`` (OpenVINO) and ``[tests]``. torch and mmcv (with its
compiled ops) are best installed first, the OpenMMLab way (see
requirements/mminstall.txt and ``make setup``).

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
        'det': read_requirements('det.txt'),
        'seg': read_requirements('seg.txt'),
        'all': read_requirements('det.txt') + read_requirements('seg.txt'),
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

"""Install mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

torch and mmcv (with its compiled ops) are prerequisites installed first, the
OpenMMLab way (see requirements/mminstall.txt and ``make setup``).
"""
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent


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
        'tests': read_requirements('tests.txt'),
        'mim': read_requirements('mminstall.txt'),
        'deploy': read_requirements('deploy.txt'),
    },
    license='Apache License 2.0',
    zip_safe=False,
)

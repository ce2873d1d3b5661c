"""The built wheel: its requirements (the family-neutral core always, each
OpenMMLab family's mmcv, mmengine and mmdet / mmsegmentation as extras),
the model zoo it carries for mim (mmrmt/.mim: configs, tools, demo, docs,
model-index.yml), its licence; an installed wheel's configs
load without a clone, also as ``mmrmt::`` bases; a detection-only and a
segmentation-only install, resolved by pip, build and run a model of our
configs; the README's install line of the running environment's family
(upstream under make test, the onedl forks under make test-forks) changes
none of its distributions; and the editable install of ``make setup`` still builds.

The wheels are built from a copy of the repository's files (building writes
build/ and *.egg-info beside setup.py)."""
import email
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from mmrmt.version import __version__
from helpers.core_environment import FAMILIES, core_environment, running_family

REPO = Path(__file__).resolve().parents[1]
MIM = 'mmrmt/.mim/'


def repository_files() -> List[str]:
    """Tracked and untracked, not ignored files: what a fresh clone plus local edits hold."""
    listed = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return [name for name in listed if (REPO / name).is_file()]


@pytest.fixture(scope='module')
def source_copy(tmp_path_factory) -> Path:
    copy = tmp_path_factory.mktemp('source')
    for name in repository_files():
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / name).read_bytes())
    return copy


@pytest.fixture(scope='module')
def wheel(source_copy, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp('wheel')
    result = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '.', '--no-deps', '--no-build-isolation',
                             '--quiet', '-w', str(out)], cwd=source_copy, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (built, ) = out.glob('mmrmt-*.whl')
    return built


def model_index_configs() -> List[str]:
    """The ``Config`` of every model of every metafile model-index.yml imports."""
    index = yaml.safe_load((REPO / 'model-index.yml').read_text())
    configs = []
    for metafile in index['Import']:
        configs += [model['Config'] for model in yaml.safe_load((REPO / metafile).read_text())['Models']]
    return configs


def test_model_index_imports_every_metafile_and_names_existing_configs():
    index = yaml.safe_load((REPO / 'model-index.yml').read_text())
    assert sorted(index['Import']) == sorted(
        str(path.relative_to(REPO)) for path in (REPO / 'configs').glob('*/metafile.yml'))
    configs = model_index_configs()
    assert len(configs) == len(set(configs))
    assert set(configs) == {str(path.relative_to(REPO)) for folder in ('rmt', 'rest', 'resmlp')
                            for path in (REPO / 'configs' / folder).glob('*.py')}
    missing = [config for config in configs if not (REPO / config).is_file()]
    assert not missing, f'metafile entries without a config: {missing}'


def test_wheel_carries_configs_tools_docs_and_model_index(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(name for name in repository_files()
                     if name.startswith(('configs/', 'tools/', 'demo/', 'docs/')) or name == 'model-index.yml')
    absent = [name for name in shipped if MIM + name not in names]
    assert not absent, f'missing from the wheel: {absent}'
    assert all(MIM + config in names for config in model_index_configs())
    assert not [name for name in names if '__pycache__' in name or name.endswith('.pyc')]
    assert 'mmrmt/models/backbones/rmt/backbone.py' in names


def wheel_metadata(wheel: Path) -> email.message.Message:
    archive = zipfile.ZipFile(wheel)
    (name, ) = [name for name in archive.namelist() if name.endswith('.dist-info/METADATA')]
    return email.message_from_bytes(archive.read(name))


def test_wheel_requires_the_core_and_offers_each_library_of_each_family_as_an_extra(wheel):
    """Nothing unconditional names a distribution of one family only (the forks install the
    modules mmcv, mmengine, mmdet, mmseg under other names), so that no install puts one
    family's over the other's."""
    metadata = wheel_metadata(wheel)
    requirements = [Requirement(line) for line in metadata.get_all('Requires-Dist')]
    unconditional = {requirement.name for requirement in requirements if requirement.marker is None}
    assert unconditional == {'torch', 'torchvision', 'timm', 'filelock'}  # filelock: torch's too

    def extra(name: str) -> set:
        return {requirement.name for requirement in requirements
                if requirement.marker is not None and requirement.marker.evaluate({'extra': name})}

    assert extra('det') == {'mmcv', 'mmengine', 'mmdet'}
    assert extra('seg') == {'mmcv', 'mmengine', 'mmsegmentation', 'ftfy', 'regex'}
    assert extra('all') == extra('det') | extra('seg')
    assert extra('onedl-det') == {'onedl-mmcv', 'onedl-mmengine', 'onedl-mmdetection', 'faster-coco-eval'}
    assert extra('onedl-seg') == {'onedl-mmcv', 'onedl-mmengine', 'onedl-mmsegmentation'}
    assert extra('onedl-all') == extra('onedl-det') | extra('onedl-seg')
    assert extra('deploy') == {'onnx', 'onnxruntime', 'onnxscript'}
    assert extra('openvino') == {'openvino'}
    assert set(metadata.get_all('Provides-Extra')) >= {'det', 'seg', 'all', 'onedl-det', 'onedl-seg', 'onedl-all',
                                                       'deploy', 'openvino', 'tests'}
    assert metadata['License-File'] == 'LICENSE'
    licence = [name for name in zipfile.ZipFile(wheel).namelist() if name.endswith('dist-info/licenses/LICENSE')]
    assert zipfile.ZipFile(wheel).read(licence[0]) == (REPO / 'LICENSE').read_bytes()


def test_metafile_readmes_resolve_in_the_wheel(wheel):
    """mim shows each collection's README: the wheel carries the file it names."""
    names = set(zipfile.ZipFile(wheel).namelist())
    index = yaml.safe_load((REPO / 'model-index.yml').read_text())
    readmes = {collection['README'] for metafile in index['Import']
               for collection in yaml.safe_load((REPO / metafile).read_text())['Collections']}
    assert readmes and all(MIM + readme in names for readme in readmes), readmes


#: A user's config inheriting two zoo configs of the installed package as
#: ``mmrmt::`` bases (their own bases resolve inside ``.mim``, ``mmdet::`` /
#: ``mmseg::`` ones in the libraries), the ImageNet checkpoint left out.
USER_CONFIGS = {
    'det': "_base_ = 'mmrmt::rmt/retinanet_rmt-t_fpn_1x_coco.py'\n"
           'model = dict(backbone=dict(init_cfg=None, drop_path_rate=0.0))\n',
    'seg': "_base_ = 'mmrmt::rmt/fpn_rmt-t_8xb2-80k_ade20k-512x512.py'\n"
           'model = dict(backbone=dict(init_cfg=None, drop_path_rate=0.0))\n',
}

#: Build the config's model in its library's registry and run it on an image.
BUILD_AND_RUN = """
import sys
from importlib.util import find_spec

import torch
import mmrmt
from mmengine.config import Config
from mmengine.registry import init_default_scope

cfg = Config.fromfile(sys.argv[1])
init_default_scope(cfg.default_scope)
registry = __import__(cfg.default_scope + '.registry', fromlist=['MODELS']).MODELS
model = registry.build(cfg.model).eval()
with torch.no_grad():
    outputs = model(torch.zeros(1, 3, 64, 64), mode='tensor')
levels = outputs[0] if isinstance(outputs, tuple) else [outputs]
print(mmrmt.__file__)
print(type(model).__name__, type(model.backbone).__name__, cfg.model.backbone.drop_path_rate,
      [tuple(level.shape[-2:]) for level in levels], [find_spec(name) is not None for name in ('mmdet', 'mmseg')])
"""


def run_user_config(python: str, kind: str, folder: Path, env: dict) -> List[str]:
    """Run :data:`BUILD_AND_RUN` on ``USER_CONFIGS[kind]``; return its last two output lines."""
    config = folder / f'my_{kind}_config.py'
    config.write_text(USER_CONFIGS[kind])
    result = subprocess.run([python, '-c', BUILD_AND_RUN, str(config)], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-2:]


def test_installed_wheel_configs_load_as_mmrmt_bases(wheel, tmp_path):
    """A user without a clone: the wheel unpacked as pip installs it."""
    site = tmp_path / 'site'
    zipfile.ZipFile(wheel).extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site))  # the wheel's mmrmt, not this checkout's
    module_file, summary = run_user_config(sys.executable, 'det', tmp_path, env)
    assert module_file == str(site / 'mmrmt' / '__init__.py')
    assert summary == 'RetinaNet RMT 0.0 [(8, 8), (4, 4), (2, 2), (1, 1), (1, 1)] [True, True]'


#: What a timm user runs after ``pip install mmrmt`` with no extra.
TIMM_USER = """
import sys, timm, torch
model = timm.create_model('rmt_t', features_only=True).eval()
with torch.no_grad():
    print([tuple(f.shape) for f in model(torch.randn(1, 3, 64, 64))])
print(sorted(name for name in sys.modules if name.split('.')[0] in ('mmcv', 'mmengine', 'mmdet', 'mmseg')))
"""


def test_the_wheel_without_an_extra_serves_timm_users_with_only_torch_torchvision_and_timm(wheel, tmp_path):
    """``pip install mmrmt.whl`` into an environment holding torch, torchvision and timm only (no mmcv,
    mmengine, mmdet or mmseg): it installs nothing but mmrmt, and ``timm.create_model('rmt_t',
    features_only=True)`` runs."""
    python = core_environment(tmp_path, openmmlab=False)
    env = {key: value for key, value in os.environ.items() if key != 'PYTHONPATH'}
    install = subprocess.run(
        [sys.executable, '-m', 'pip', '--python', str(python), 'install', '--disable-pip-version-check',
         '--no-compile', '-c', str(REPO / 'requirements' / 'constraints.txt'), str(wheel)],
        env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]
    assert install.stdout.strip().splitlines()[-1] == f'Successfully installed mmrmt-{__version__}'
    result = subprocess.run([str(python), '-c', 'import mmrmt\n' + TIMM_USER], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines() == [
        '[(1, 64, 16, 16), (1, 128, 8, 8), (1, 256, 4, 4), (1, 512, 2, 2)]', '[]']


@pytest.mark.parametrize('extra,summary', [
    ('det', 'RetinaNet RMT 0.0 [(8, 8), (4, 4), (2, 2), (1, 1), (1, 1)] [True, False]'),
    ('seg', 'EncoderDecoder RMT 0.0 [(16, 16)] [False, True]'),
])
def test_one_library_is_enough(wheel, tmp_path, extra, summary):
    """``pip install mmrmt.whl[det]`` (or ``[seg]``; ``[onedl-det]`` / ``[onedl-seg]`` on the
    forks) into an environment holding only the core packages of the running family: pip's
    resolver brings that library and not the other one, and a model of our configs builds and runs."""
    family = FAMILIES[running_family()]
    python = core_environment(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != 'PYTHONPATH'}
    # --no-compile: the installed files are the same, their bytecode is written when the run imports them
    install = subprocess.run(
        [sys.executable, '-m', 'pip', '--python', str(python), 'install', '--disable-pip-version-check',
         '--no-compile', '-c', str(REPO / 'requirements' / 'constraints.txt'),
         f'{wheel}[{family["extras"]}{extra}]'],
        env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]
    installed = install.stdout.strip().splitlines()[-1].split()
    assert installed[:2] == ['Successfully', 'installed'], installed
    names = {canonicalize_name(name.rsplit('-', 1)[0]) for name in installed[2:]}
    other = 'seg' if extra == 'det' else 'det'
    assert family[extra] in names and family[other] not in names, installed
    assert not names & {'torch', *family['core']}, installed  # the core was there
    module_file, printed = run_user_config(str(python), extra, tmp_path, env)
    assert module_file.startswith(str(tmp_path / 'venv')), module_file
    assert printed == summary


@pytest.mark.parametrize('extras', ['{family}all', '{family}det', '{family}seg', None])
def test_the_readme_install_of_the_running_family_changes_none_of_its_distributions(source_copy, extras):
    """``pip install -e ".[det]"`` (upstream) or ``".[onedl-det]"`` (the forks), and plain
    ``pip install -e .``, into the environment running the suite: pip would install mmrmt and
    nothing else, i.e. no distribution of the stack is replaced (nor one of the other family added)."""
    target = '.' if extras is None else f'.[{extras.format(family=FAMILIES[running_family()]["extras"])}]'
    result = subprocess.run([sys.executable, '-m', 'pip', 'install', '--disable-pip-version-check', '--dry-run',
                             '--no-build-isolation', '-e', target], cwd=source_copy, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    (would, ) = [line for line in result.stdout.splitlines() if line.startswith('Would install')]
    assert would.split()[2:] == [f'mmrmt-{__version__}'], would


def test_editable_build_maps_the_package_to_the_source(source_copy, tmp_path):
    """``make setup`` installs mmrmt editable (PEP 660): the editable wheel maps
    ``mmrmt`` to the source folder and copies nothing."""
    script = ('import sys\n'
              'from setuptools import build_meta\n'
              'print(build_meta.build_editable(sys.argv[1]))\n')
    result = subprocess.run([sys.executable, '-c', script, str(tmp_path)], cwd=source_copy,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    editable = zipfile.ZipFile(tmp_path / result.stdout.strip().splitlines()[-1])
    (finder, ) = [name for name in editable.namelist() if name.endswith('_finder.py')]
    assert repr({'mmrmt': str(source_copy / 'mmrmt')}) in editable.read(finder).decode()
    assert not [name for name in editable.namelist() if '.mim' in name]

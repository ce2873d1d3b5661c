"""The built wheel carries the model zoo for mim (mmrmt/.mim: configs, tools,
demo, model-index.yml), an installed wheel's configs load without a clone,
and the editable install of ``make setup`` still builds.

The wheels are built from a copy of the repository's files (building writes
build/ and *.egg-info beside setup.py)."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List

import pytest
import yaml

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


def test_wheel_carries_configs_tools_and_model_index(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(name for name in repository_files()
                     if name.startswith(('configs/', 'tools/', 'demo/')) or name == 'model-index.yml')
    absent = [name for name in shipped if MIM + name not in names]
    assert not absent, f'missing from the wheel: {absent}'
    assert all(MIM + config in names for config in model_index_configs())
    assert not [name for name in names if '__pycache__' in name or name.endswith('.pyc')]
    assert 'mmrmt/models/backbones/rmt/backbone.py' in names


def test_installed_wheel_carries_usable_configs(wheel, tmp_path):
    """A user without a clone: the wheel unpacked as pip installs it; a config of
    theirs inheriting a zoo config of the installed package, loaded by mmengine
    (the zoo config's own bases resolve inside ``.mim``, ``mmdet::`` ones in mmdet)."""
    site = tmp_path / 'site'
    zipfile.ZipFile(wheel).extractall(site)
    script = ('import os, sys, mmrmt\n'
              'from mmengine.config import Config\n'
              'zoo = os.path.join(os.path.dirname(mmrmt.__file__), ".mim", "configs")\n'
              'with open("my_config.py", "w") as file:\n'
              '    file.write(f"_base_ = [{zoo + \'/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py\'!r}]\\n"\n'
              '               "model = dict(backbone=dict(drop_path_rate=0.0))\\n")\n'
              'cfg = Config.fromfile("my_config.py")\n'
              'print(mmrmt.__file__)\n'
              'print(cfg.model.backbone.type, cfg.model.backbone.arch, cfg.model.backbone.drop_path_rate,\n'
              '      cfg.tta_model.type, cfg.train_dataloader.dataset.type)\n')
    env = dict(os.environ, PYTHONPATH=str(site))  # the wheel's mmrmt, not this checkout's
    result = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    module_file, summary = result.stdout.strip().splitlines()[-2:]
    assert module_file == str(site / 'mmrmt' / '__init__.py')
    assert summary == 'RMT t 0.0 InstanceSegTTAModel CocoDataset'


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

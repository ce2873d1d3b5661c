"""``_base_ = 'mmrmt::FOLDER/NAME.py'`` after ``import mmrmt``, from this checkout
(as an editable install sees it: no ``.mim``, the repository's configs/).
The installed wheel's case is in test_packaging.py."""
import subprocess
import sys
from pathlib import Path

import mmengine.config.config as mmengine_config
import pytest
from mmengine.config import Config
from mmengine.config.utils import MODULE2PACKAGE

import mmrmt
from mmrmt.config_bases import enable_mmrmt_bases, zoo_configs_dir
from mmrmt.upstream_fixes import find_libraries_under_fork_names

REPO = Path(__file__).resolve().parents[1]
ZOO_CONFIG = 'rmt/upernet_rmt-t_8xb2-160k_ade20k-512x512.py'


def user_config(tmp_path: Path, base: str) -> str:
    path = tmp_path / 'my_config.py'
    path.write_text(f'_base_ = {base!r}\nmodel = dict(backbone=dict(drop_path_rate=0.0))\n')
    return str(path)


def test_a_zoo_config_inherited_as_mmrmt_base_equals_it_inherited_by_path(tmp_path):
    assert zoo_configs_dir() == REPO / 'configs'
    by_name = Config.fromfile(user_config(tmp_path, f'mmrmt::{ZOO_CONFIG}'))
    by_path = Config.fromfile(user_config(tmp_path, str(REPO / 'configs' / ZOO_CONFIG)))
    assert by_name.to_dict() == by_path.to_dict()
    assert by_name.model.backbone.type == 'RMT' and by_name.model.backbone.drop_path_rate == 0.0
    assert by_name.default_scope == 'mmseg'


def test_other_bases_keep_mmengine_lookup(tmp_path):
    cfg = Config.fromfile(user_config(tmp_path, 'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py'))
    assert cfg.model._scope_ == 'mmdet' and cfg.model.backbone.type == 'ResNet'
    enable_mmrmt_bases()  # a second call changes nothing
    assert Config.fromfile(user_config(tmp_path, f'mmrmt::{ZOO_CONFIG}')).model.backbone.type == 'RMT'


def test_a_package_base_is_looked_up_once_a_process(tmp_path, monkeypatch):
    """mmengine finds ``mmdet::`` bases by reloading pkg_resources (about a second): a config read again,
    or another inheriting the same bases, finds them without it, and reads the same."""
    first = Config.fromfile(user_config(tmp_path, 'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py'))
    lookups = []
    monkeypatch.setattr(mmengine_config, 'is_installed', lambda package: lookups.append(package) or True)
    again = Config.fromfile(user_config(tmp_path, 'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py'))
    assert lookups == [] and again.to_dict() == first.to_dict()
    monkeypatch.undo()
    with pytest.raises(ModuleNotFoundError, match='mmpose is not installed'):  # mmengine's error, unchanged
        Config.fromfile(user_config(tmp_path, 'mmpose::body_2d_keypoint/x.py'))


def test_a_library_installed_under_a_fork_name_gives_its_bases(tmp_path, monkeypatch):
    """The onedl forks install the module mmseg as the distribution onedl-mmsegmentation, where
    mmengine looks for ``mmsegmentation`` (its MODULE2PACKAGE): mmseg's bases are found all the same."""
    monkeypatch.setitem(MODULE2PACKAGE, 'mmseg', 'no-such-distribution')  # as on the forks, whichever family runs
    monkeypatch.setitem(MODULE2PACKAGE, 'mmpose', 'mmpose')  # neither the module nor a distribution
    find_libraries_under_fork_names()
    assert MODULE2PACKAGE['mmseg'] == 'mmseg' and MODULE2PACKAGE['mmpose'] == 'mmpose'
    cfg = Config.fromfile(user_config(tmp_path, 'mmseg::_base_/schedules/schedule_40k.py'))
    assert cfg.train_cfg == dict(type='IterBasedTrainLoop', max_iters=40000, val_interval=4000, _scope_='mmseg')


@pytest.mark.parametrize('name', ['rmt/no_such_config.py', 'rmt/upernet_rmt-t_8xb2-160k_ade20k-512x512',
                                  '../mmrmt/upstream_fixes.py', '../../main/setup.py', '/etc/hostname.py'])
def test_an_unknown_name_is_one_line_naming_the_form(tmp_path, name):
    """Also a path leading out of mmrmt's configs: an mmrmt:: base names one of them, no other file."""
    with pytest.raises(FileNotFoundError) as info:
        Config.fromfile(user_config(tmp_path, f'mmrmt::{name}'))
    message = str(info.value)
    assert '\n' not in message
    assert message == (f"base 'mmrmt::{name}': mmrmt has no config {name!r} (in {REPO / 'configs'}); name one "
                       'as mmrmt::FOLDER/NAME.py, e.g. mmrmt::rmt/retinanet_rmt-t_fpn_1x_coco.py')


def test_before_import_mmrmt_mmengine_refuses_it(tmp_path):
    """What docs/get_started.md tells users of mmdet's / mmseg's own train.py: the
    bases are read before the config's custom_imports are imported."""
    config = tmp_path / 'my_config.py'
    config.write_text(f"_base_ = 'mmrmt::{ZOO_CONFIG}'\ncustom_imports = dict(imports=['mmrmt'])\n")
    script = 'import sys\nfrom mmengine.config import Config\nConfig.fromfile(sys.argv[1])\n'
    result = subprocess.run([sys.executable, '-c', script, str(config)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        'AssertionError: mmengine does not support to load mmrmt config.')
    assert mmrmt.__file__ == str(REPO / 'mmrmt' / '__init__.py')

"""``Runner.from_cfg`` builds an mmrmt config's ``runner_type`` (mmseg's own test.py calls it on Runner)."""
import pytest
from mmengine.config import Config
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from mmrmt.engine import OwnWorkDirRunner
from mmrmt.upstream_fixes import runner_class_named


class UsersOwnWorkDirRunner(OwnWorkDirRunner):
    """A user's subclass of our runner, named by its class in a config."""


@pytest.mark.parametrize('runner_type,expected', [
    ('OwnWorkDirRunner', OwnWorkDirRunner),
    ('mmrmt.OwnWorkDirRunner', OwnWorkDirRunner),
    (UsersOwnWorkDirRunner, UsersOwnWorkDirRunner),
    (None, Runner),
    ('Runner', Runner),
])
def test_runner_class_named_by_the_config(runner_type, expected):
    cfg = Config(dict(model=dict(type='Model')) if runner_type is None else dict(runner_type=runner_type))
    assert runner_class_named(cfg) is expected


def test_from_cfg_on_mmengine_runner_builds_our_runner(tmp_path, monkeypatch):
    """What mmseg's tools/test.py does, with the arguments our runner receives recorded."""
    built = {}

    def record(self, **kwargs):
        built.update(cls=type(self), work_dir=kwargs['work_dir'])

    monkeypatch.setattr(OwnWorkDirRunner, '__init__', record)
    cfg = Config(dict(runner_type='OwnWorkDirRunner', model=dict(type='Model'), work_dir=str(tmp_path / 'work')))
    runner = Runner.from_cfg(cfg)
    assert isinstance(runner, OwnWorkDirRunner)
    assert built == dict(cls=OwnWorkDirRunner, work_dir=str(tmp_path / 'work'))
    assert not (tmp_path / 'work').exists()


def test_from_cfg_without_our_runner_type_is_mmengines(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(Runner, '__init__', lambda self, **kwargs: built.append(type(self)))
    Runner.from_cfg(Config(dict(model=dict(type='Model'), work_dir=str(tmp_path))))
    RUNNERS.get('Runner').from_cfg(Config(dict(runner_type='Runner', model=dict(type='Model'),
                                               work_dir=str(tmp_path))))
    assert built == [Runner, Runner]

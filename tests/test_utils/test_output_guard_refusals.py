"""The output guard's one lines (moved from tests/tools/test_bad_inputs_probe.py, whose rows keep one case a tool):
an output that is a data folder, the config or a checkpoint (links resolved), a
detector's --out that is no .pkl file."""
from pathlib import Path

import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError, check_not_an_input, dataloader_inputs
from mmrmt.utils.prediction_out import check_prediction_out

DET = Config(dict(default_scope='mmdet', test_dataloader=dict(
    dataset=dict(data_root='data/coco/', ann_file='ann.json', data_prefix=dict(img='val/')))))
SEG = Config(dict(default_scope='mmseg', test_dataloader=dict(
    dataset=dict(data_root='data/ade/', data_prefix=dict(img_path='images/', seg_map_path='labels/')))))


def refusal(check, *args) -> str:
    with pytest.raises(PreflightError) as refused:
        check(*args)
    return str(refused.value)


@pytest.mark.parametrize('cfg,output,role', [
    (DET, 'data/coco/val', 'the img folder of test_dataloader data/coco/val/'),
    (DET, 'data/coco/val/work', 'the img folder of test_dataloader data/coco/val/'),
    (SEG, 'data/ade/images', 'the img_path folder of test_dataloader data/ade/images/'),
])
def test_a_data_folder_is_never_an_output(cfg, output, role, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for folder in ('data/coco/val', 'data/ade/images'):
        (tmp_path / folder).mkdir(parents=True)
    relation = 'is' if output.endswith(('val', 'images')) else 'lies inside'
    assert refusal(check_not_an_input, output, '--work-dir', dataloader_inputs(cfg, ['test_dataloader'])) == (
        f'--work-dir {output} {relation} {role}; a tool never writes over its inputs (not even with --force): '
        'choose another --work-dir')


def test_out_is_never_the_config_or_the_checkpoint_behind_a_link(tmp_path):
    config, checkpoint = tmp_path / 'det.py', tmp_path / 'whole.pth'
    config.write_text('')
    checkpoint.write_bytes(b'weights')
    (tmp_path / 'link.pkl').symlink_to(checkpoint)
    (tmp_path / 'config.pkl').symlink_to(config)
    inputs = [('the checkpoint', str(checkpoint)), ('the config', str(config))]
    for name, role in (('link.pkl', f'the checkpoint {checkpoint}'), ('config.pkl', f'the config {config}')):
        out = str(tmp_path / name)
        assert refusal(check_prediction_out, DET, out, True, inputs).startswith(f'--out {out} is {role}; ')
    assert refusal(check_prediction_out, DET, 'p.json', False, inputs) == (
        '--out must name a .pkl file for detection, got p.json')
    assert refusal(check_prediction_out, SEG, str(tmp_path), False, [('the config', str(tmp_path))]).startswith(
        f'--out {tmp_path} is the config {tmp_path}; ')
    assert checkpoint.read_bytes() == b'weights'


@pytest.mark.parametrize('cfg,name', [(DET, 'p.pkl'), (SEG, 'maps')])
def test_out_in_a_folder_yet_to_be_made_is_claimed_there(cfg, name, tmp_path):
    """The claim file of --out goes beside it, in a folder filelock makes (as the run would), and goes after."""
    from mmrmt.utils.prediction_out import claim_path, prediction_out_claimed
    out = tmp_path / 'new' / 'deeper' / name
    with prediction_out_claimed(Config(dict(cfg, test_evaluator=dict(type='M'))), str(out)):
        assert Path(claim_path(str(out))).is_file()
    assert sorted(path.name for path in out.parent.iterdir()) == []


def test_out_is_claimed_by_rank_0_only(tmp_path, monkeypatch):
    from mmrmt.utils.prediction_out import prediction_out_claimed
    monkeypatch.setenv('RANK', '1')
    with prediction_out_claimed(DET, str(tmp_path / 'p.pkl')), prediction_out_claimed(DET, None):
        assert list(tmp_path.iterdir()) == []

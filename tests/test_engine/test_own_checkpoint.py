"""A work dir's last_checkpoint resolves inside the run's own checkpoint folder."""
from pathlib import Path

import pytest
from mmengine.config import Config
from mmengine.logging import MessageHub

from mmrmt.engine.own_checkpoint import (ForeignCheckpointError, checkpoint_folder, checkpoint_out_dir,
                                         earlier_run_problem, keep_checkpoint_paths_own, own_last_checkpoint)


def record(work_dir: Path, checkpoint: Path) -> None:
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / 'last_checkpoint').write_text(str(checkpoint))


def test_own_checkpoint_is_kept(tmp_path):
    record(tmp_path, tmp_path / 'iter_4.pth')
    assert own_last_checkpoint(str(tmp_path)) == (str(tmp_path / 'iter_4.pth'), None)


def test_no_record_means_no_checkpoint(tmp_path):
    assert own_last_checkpoint(str(tmp_path)) == (None, None)


def test_copied_work_dir_resumes_from_its_own_copy(tmp_path):
    original, copy = tmp_path / 'wd', tmp_path / 'wd2'
    record(copy, original / 'iter_4.pth')
    (copy / 'iter_4.pth').touch()
    checkpoint, note = own_last_checkpoint(str(copy))
    assert checkpoint == str(copy / 'iter_4.pth')
    assert note == (f'{copy}/last_checkpoint names {original}/iter_4.pth, outside this run\'s '
                    f'folder {copy} (a copied or moved work dir?): resuming from '
                    f'{copy}/iter_4.pth instead')


def test_foreign_checkpoint_missing_here_is_one_error(tmp_path):
    original, copy = tmp_path / 'wd', tmp_path / 'wd2'
    record(copy, original / 'iter_4.pth')
    (original / 'iter_4.pth').parent.mkdir()
    (original / 'iter_4.pth').touch()  # it exists there, but is not this run's
    with pytest.raises(ForeignCheckpointError) as error:
        own_last_checkpoint(str(copy))
    assert str(error.value) == (
        f'{copy}/last_checkpoint names {original}/iter_4.pth, a checkpoint outside this run\'s '
        f'folder {copy} (a copied or moved work dir?), and {copy}/iter_4.pth does not exist: '
        'resume from a checkpoint of this work dir by naming it (--resume CKPT), or delete '
        f'{copy}/last_checkpoint to train from scratch')


def test_checkpoint_hook_out_dir_is_the_runs_folder(tmp_path):
    cfg = Config(dict(default_hooks=dict(checkpoint=dict(type='CheckpointHook',
                                                         out_dir=str(tmp_path / 'disk')))))
    work_dir = tmp_path / 'runs' / 'wd'
    folder = checkpoint_folder(str(work_dir), checkpoint_out_dir(cfg))
    assert folder == str(tmp_path / 'disk' / 'wd')
    record(work_dir, Path(folder) / 'iter_4.pth')
    assert own_last_checkpoint(str(work_dir), checkpoint_out_dir(cfg))[0] == f'{folder}/iter_4.pth'
    assert checkpoint_folder('s3://bucket/wd', 's3://bucket/ckpts') == 's3://bucket/ckpts/wd'


def test_resumed_message_hub_names_only_own_checkpoints(tmp_path):
    hub = MessageHub('own_checkpoint_test')
    hub.update_info('best_ckpt', '/elsewhere/wd/best_coco_bbox_mAP_iter_2.pth')
    hub.update_info('last_ckpt', f'{tmp_path}/iter_4.pth')
    hub.update_info('best_ckpt_mIoU', '/elsewhere/wd/best_mIoU_iter_2.pth')
    hub.update_info('iter', 4)
    keep_checkpoint_paths_own(hub, str(tmp_path))
    assert hub.get_info('best_ckpt') == f'{tmp_path}/best_coco_bbox_mAP_iter_2.pth'
    assert hub.get_info('best_ckpt_mIoU') == f'{tmp_path}/best_mIoU_iter_2.pth'
    assert hub.get_info('last_ckpt') == f'{tmp_path}/iter_4.pth'
    assert hub.get_info('iter') == 4


@pytest.mark.parametrize('files,held', [
    (['iter_2.pth', 'last_checkpoint'], '{run}/last_checkpoint'),
    (['epoch_1.pth', 'iter_2.pth'], '{run}/epoch_1.pth and 1 more checkpoints'),
])
def test_an_earlier_run_is_never_overwritten(files, held, tmp_path):
    run = tmp_path / 'run'
    run.mkdir()
    assert earlier_run_problem(str(run)) is None  # an empty work dir is free
    for name in files:
        (run / name).write_text(str(run / 'iter_2.pth'))
    assert earlier_run_problem(str(run)) == (
        f'work dir {run} holds an earlier run ({held.format(run=run)}), which this run would overwrite: add '
        '--resume to continue it, or choose another --work-dir')

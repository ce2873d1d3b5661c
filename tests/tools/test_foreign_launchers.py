"""mmdet's and mmseg's own tools/train.py, given our configs and nothing else,
keep our guarantees: --resume loads under torch's weights-only unpickler, and
a run stopped after 2 iterations and resumed to 4 ends with exactly the
weights of a straight 4-iteration run (the ResumeRNGHook the configs name)."""
from importlib import import_module
from pathlib import Path

import pytest
import torch
from tool_process import (DET_CONFIG, SEG_CONFIG, check_ok, det_data_options, load_checkpoint,
                          run_script, seg_data_options)


def library_train_script(library: str) -> Path:
    """The tools/train.py shipped inside an installed mmdet / mmseg package."""
    return Path(import_module(library).__file__).parent / '.mim' / 'tools' / 'train.py'


@pytest.mark.parametrize('library,config,data_options', [
    ('mmdet', DET_CONFIG, det_data_options),
    ('mmseg', SEG_CONFIG, seg_data_options),
])
def test_library_train_script_resumes_to_the_uninterrupted_weights(library, config, data_options,
                                                                   demo_root, tmp_path):
    script = library_train_script(library)
    options = ['train_cfg.val_interval=100', *data_options(demo_root)]
    straight, interrupted = tmp_path / 'straight', tmp_path / 'interrupted'
    check_ok(run_script(script, [config, '--work-dir', straight, '--cfg-options', *options]))
    check_ok(run_script(script, [config, '--work-dir', interrupted, '--cfg-options',
                                 'train_cfg.max_iters=2', *options]))
    assert not (interrupted / 'iter_4.pth').exists()
    resumed = run_script(script, [config, '--work-dir', interrupted, '--resume', '--cfg-options',
                                  *options])
    check_ok(resumed)
    assert 'resumed epoch: 0, iter: 2' in resumed.stdout + resumed.stderr

    expected, continued = (load_checkpoint(run / 'iter_4.pth')['state_dict']
                            for run in (straight, interrupted))
    assert expected.keys() == continued.keys()
    differing = [key for key, value in expected.items() if not torch.equal(value, continued[key])]
    assert not differing, f'{len(differing)} of {len(expected)} tensors differ, e.g. {differing[:3]}'

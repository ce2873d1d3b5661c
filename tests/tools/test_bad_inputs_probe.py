"""The bad-input probe: every script of tools/ and demo/, and mmdet's and mmseg's own train.py, given
inputs users get wrong, ends with one `error:` line naming the problem, exit status non-zero, nothing written.

Each row of :data:`ROWS` is (tool, arguments, a part of the expected line). Arguments name the
bad files of the ``bad`` fixture as ``{name}``. Every tool has a row (its way from a bad input to the
one line); the others are the tools' own checks and the guarantees (an output that is an input, or that
exists, is refused). The checks several tools share (the config, --cfg-options, a checkpoint, an ONNX
file, the output guard) have every kind of bad input they refuse tested beside their module
(tests/test_utils, tests/test_checkpoint, tests/test_benchmark). A row passes when
the tool exits with exactly one line, starting ``error:`` and holding the expected part, printed
nothing else, and left the folder it ran in and the bad files as they were. The tools run in this
process (``runpy``, as their ``__main__``), the launchers in subprocesses. docs/troubleshooting.md
mirrors the table (:func:`table_markdown`; a test keeps the two equal).
"""
import hashlib
import os
import pickle
import runpy
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest
import torch
from PIL import Image

from mmrmt.engine.own_work_dir_runner import LOCK_FILE
from mmrmt.utils.prediction_out import claim_path
from helpers.onnx_graphs import matmul_graph, two_stage_like_graph
from tool_process import (DET_CONFIG, READ_BY_MMSEG_TOOLS, REPO, SEG_CONFIG, TEST_CONFIGS, det_data_options,
                          exit_message, library_train_script, run_script)

LOCKS = {
    'lock_fifo': 'is a named pipe (FIFO), not a lock file mmrmt wrote',
    'lock_folder': 'is a folder, not a lock file mmrmt wrote',
}

Row = Tuple[str, List[str], str]


def rows() -> List[Row]:
    """The probe's table."""
    return [
        ('analysis_tools/benchmark.py', ['{cfg_self}', '--mode', 'infer'], 'its _base_ files are circular'),
        ('deployment/profile_onnx.py', ['{onnx_cut}'], 'is not a complete ONNX model (truncated'),
        ('misc/demo.py', ['--work-dir', 'work', '--cfg-options', 'train_cfg.max_iters=0'],
         '--cfg-options: train_cfg.max_iters must be an int >= 1, got 0'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--batch', '4', '--images-per-run', '3',
                                        '--out', 'm.onnx'], 'give a positive divisor of --batch 4'),
    ] + inputs_never_outputs() + bounded_inputs()


#: The one line of an output that is an input (the output guard, mmrmt/utils/output_guard.py).
NEVER_AN_INPUT = 'a tool never writes over its inputs (not even with --force)'


def inputs_never_outputs() -> List[Row]:
    """An output that is, or lies inside, one of the tool's inputs, links resolved: refused whatever
    --force says (issue 41's lost files, and more of the kind); an earlier run never overwritten."""
    test_images, train_images = 'data/demo/coco/val', 'data/demo/coco/train'  # {det}'s image folders
    exists = 'exists; choose another path, or add --force to replace it'
    return [
        ('test.py', ['{det}', '{whole}', '--work-dir', 'work', '--out', '{link_pkl}', '--force'],
         '--out {bad}/link.pkl is the checkpoint {bad}/whole.pth; ' + NEVER_AN_INPUT),
        ('test.py', ['{det}', '{whole}', '--work-dir', 'work', '--show-dir', test_images],
         f'--show-dir {test_images} is the img folder of test_dataloader data/demo/coco/val/'),
        ('train.py', ['{det}', '--work-dir', train_images], 'is the img folder of train_dataloader'),
        ('train.py', ['{det}', '--work-dir', '{finished_run}'], 'holds an earlier run '
         '({finished_run}/last_checkpoint), which this run would overwrite: add --resume to continue it, or choose '
         'another --work-dir'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--weights', '{whole}', '--out', '{whole}',
                                        '--force'], '--out {bad}/whole.pth is --weights {bad}/whole.pth'),
        ('deployment/test_onnx.py', ['{det}', '{onnx_two_stage_masks}', '--work-dir', test_images],
         'is the img folder of test_dataloader'),
        ('deployment/quantize_onnx.py', ['{onnx_whole}', '--config', '{det}', '--out', '{onnx_whole}', '--force'],
         'is the model'),
        ('../demo/image_demo.py', ['{photos}/vis/*.png', '{det}', '--out-dir', '{photos}', '--force'],
         '--out-dir {photos} would write {photos}/vis/image.png, the input image {photos}/vis/image.png; '
         + NEVER_AN_INPUT),
        ('analysis_tools/visualize_decay.py', ['{det}', '--image', '{image}', '--out', '{bad}/graphs/../image.png',
                                               '--force'], 'is --image'),
        ('model_converters/rmt_to_mmrmt.py', ['{whole}', '{whole}', '--force'], 'is the source'),
        ('model_converters/rest_detectron2_to_mmrmt.py', ['{whole}', '{link_pkl}', '--force'], 'is the source'),
        ('model_converters/rmt_upstream_trained_to_mmrmt.py', ['{whole}', '{det_copy}', '--config', '{det_copy}',
                                                               '--force'], 'is the config'),
        ('test.py', ['{det}', '{whole}', '--work-dir', 'work', '--out', '{earlier_pkl}'],
         f'--out {{earlier_pkl}} {exists}'),
        ('deployment/test_onnx.py', ['{det}', '{onnx_two_stage_masks}', '--work-dir', 'work', '--out',
                                     '{earlier_pkl}'], f'--out {{earlier_pkl}} {exists}'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--out', '{onnx_backbone}'],
         f'--out {{onnx_backbone}} {exists}'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--out', '{bad}/none/m.onnx'],
         'the folder of --out does not exist: {bad}/none'),
        ('../demo/image_demo.py', ['{image}', '{det}', '--out-dir', '{earlier_pkl}'],
         '--out-dir {earlier_pkl} exists and is not a folder'),
        ('misc/make_demo_data.py', ['--root', '{earlier_pkl}'],
         '--root {earlier_pkl} is a file, not a folder: give a folder for coco/ and ade/'),
        ('misc/make_demo_data.py', ['--root', '{dataset}'], '--root {dataset}: {dataset}/coco already holds files '
         'that are not the demo data (a dataset of yours?), which drawing it would overwrite: give a new or empty '
         'folder'),
    ]


def bounded_inputs() -> List[Row]:
    """Values outside what a tool can do (issue 41's one-line cases, and more of the kind)."""
    demo = ['{image}', '{det}', '--out-dir', 'out']
    decay = ['{det}', '--image', '{image}', '--out', 'd.png']
    onnx = ['{det}', '--shape', '64', '64', '--out', 'm.onnx']
    quantize = ['{onnx_whole}', '--config', '{det}', '--out', 'int8.onnx']
    return [
        *[('../demo/image_demo.py', [*demo, '--pred-score-thr', value], '--pred-score-thr is a score between 0 and '
           f'1, got {value}') for value in ('2.0', 'nan')],
        ('../demo/image_demo.py', ['{image}', '{det}', '--out-dir', '{photos}'], 'output file exists: '
         '{photos}/vis/image.png; pass --force to overwrite or choose another --out-dir'),
        ('../demo/image_demo.py', [*demo, '--picture-scale', '1000'], '--picture-scale 1000 would paint {image} '
         '(48x32) on 48000x32000 pixels, more than 67,108,864: give at most 209'),
        ('deployment/pytorch2onnx.py', ['{schedule}', '--shape', '64', '64', '--out', 'm.onnx'],
         '{schedule} is not an mmdet or mmseg model config'),
        ('deployment/pytorch2onnx.py', [*onnx, '--batch', '2', '--dynamic'], '--batch sets the batch of a fixed-size '
         'graph: give a positive --batch or --dynamic (any batch), got --batch 2 --dynamic'),
        ('deployment/pytorch2onnx.py', [*onnx, '--batch', '2'], 'a two-stage detector graph takes one image; drop '
         '--batch 2'),
        ('deployment/pytorch2onnx.py', [*onnx, '--runtime', 'openvino'],
         '--runtime and --precision choose where --verify runs the file: add --verify'),
        ('deployment/pytorch2onnx.py', ['{cascade}', '--shape', '64', '96', '--dynamic', '--out', 'm.onnx'],
         'a Cascade R-CNN graph exports at a fixed size only'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '16', '64', '--dynamic', '--out', 'm.onnx'],
         '--shape must be at least 64 (H W) with --dynamic, got 16 64'),
        ('deployment/quantize_onnx.py', [*quantize, '--images', 'none'], '--images folder not found: none'),
        ('deployment/quantize_onnx.py', [*quantize, '--count', '0'], '--count must be at least 1, got 0'),
        ('../demo/classify_demo.py', ['missing.jpg', '--model', 'rest_lite', '--weights', '{whole}'],
         'input not found: missing.jpg'),
        ('analysis_tools/compile_report.py', ['--backbone', 'rmt-t', '--profile', '-1'],
         '--batch and --repeats must be at least 1, --shape at least 32 32, --profile at least 0'),
        *[('analysis_tools/get_flops.py', ['{det}', '--shape', *shape], f'--shape takes H W or one size, each >= 1, '
           f'got {" ".join(shape)}') for shape in (['64', '64', '64'], ['0', '64'])],
        ('analysis_tools/visualize_decay.py', [*decay, '--query', '2', '0'], "--query 2 0 is outside stage 2's 2x3 "
         'feature map of this image; give 0 <= Y < 2 and 0 <= X < 3'),
        ('analysis_tools/visualize_decay.py', ['{rest}', '--image', '{image}', '--out', 'd.png'],
         "the config's backbone is ResT; this tool needs RMT"),
        ('analysis_tools/visualize_decay.py', ['{det}', '--image', '{image}', '--out', 'd.jpg'],
         '--out must name a .png file, got d.jpg'),
        ('analysis_tools/visualize_decay.py', ['{det}', '--image', '{image}', '--out', '{photos}/vis/image.png'],
         '--out {photos}/vis/image.png exists; choose another path, or add --force to replace it'),
        ('analysis_tools/visualize_decay.py', [*decay, '--max-size', '0'],
         '--max-size is the longer image side in pixels: give at least 1 (default 640), got 0'),
        ('deployment/mmdeploy_deploy.py', ['{deploy}/detection_onnxruntime_static.py', '{det}', '{image}',
                                           '--work-dir', 'work'],
         'but {det} (MaskRCNN) has a mask head: use {deploy}/instance-seg_onnxruntime_static.py'),
    ]


#: The launch scripts, each row (script, arguments, a part of the one line): they end before torchrun starts.
SCRIPT_ROWS = [
    ('dist_train.sh', ['{det}'], 'too few arguments; usage: tools/dist_train.sh CONFIG N'),
    *[('dist_train.sh', ['{det}', count], f"N, the number of processes a machine, must be a whole number of at least "
                                          f"1, got '{count}'") for count in ('0', 'two', '')],
    ('dist_test.sh', ['{det}', '{whole}'], 'too few arguments; usage: tools/dist_test.sh CONFIG CHECKPOINT N'),
    ('dist_test.sh', ['{det}', '{whole}', '0'], "got '0'"),
]

#: mmdet's and mmseg's own train.py (subprocesses: slow, so few rows): pytest params of (library, config, lock).
LAUNCHER_ROWS = [
    pytest.param('mmdet', DET_CONFIG, 'lock_fifo'),
    pytest.param('mmseg', SEG_CONFIG, 'lock_folder', marks=READ_BY_MMSEG_TOOLS),
]

ROWS = rows()


@pytest.fixture(scope='module')
def bad(tmp_path_factory) -> Dict[str, str]:
    """The bad files the rows name, in one folder (``{bad}``)."""
    folder = tmp_path_factory.mktemp('bad_inputs')
    paths = dict(bad=folder, det=DET_CONFIG, image=folder / 'image.png',
                 deploy=REPO / 'configs' / 'deploy', rest=REPO / 'configs/rest/retinanet_rest-small_fpn_ms-1x_coco.py',
                 cascade=TEST_CONFIGS / 'cascade-mask-rcnn_rmt-tiny_fpn_test.py')
    Image.fromarray(np.full((32, 48, 3), 128, np.uint8)).save(folder / 'image.png')
    texts = {'self.py': "_base_ = ['./self.py']\n", 'det_copy.py': f"_base_ = [{str(DET_CONFIG)!r}]\n",
             'schedule.py': 'max_iters = 10\n', 'earlier.pkl': 'the predictions of an earlier run',
             'dataset/coco/val2017/000001.jpg': 'a photo'}
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    whole = folder / 'whole.pth'
    torch.save({'state_dict': {'backbone.patch_embed.proj.0.weight': torch.zeros(1)}, 'meta': {'iter': 2},
                'message_hub': {}, 'optimizer': {}}, whole)
    (folder / 'link.pkl').symlink_to(whole)
    paths.update({name: folder / file for name, file in dict(
        cfg_self='self.py', whole='whole.pth', link_pkl='link.pkl', det_copy='det_copy.py', schedule='schedule.py',
        earlier_pkl='earlier.pkl', dataset='dataset').items()})
    graphs = folder / 'graphs'
    graphs.mkdir()
    whole_graph = matmul_graph(graphs / 'whole.onnx', output='seg_logits').read_bytes()
    (graphs / 'cut.onnx').write_bytes(whole_graph[:len(whole_graph) // 2])
    paths.update(onnx_cut=graphs / 'cut.onnx', onnx_whole=graphs / 'whole.onnx',
                 onnx_backbone=matmul_graph(graphs / 'backbone.onnx'),
                 onnx_two_stage_masks=two_stage_like_graph(graphs / 'mask_rcnn.onnx', masks=True))
    for name, make in {'lock_fifo': os.mkfifo, 'lock_folder': os.mkdir}.items():
        (folder / name).mkdir()
        make(folder / name / LOCK_FILE)
        paths[name] = folder / name
    finished = paths['finished_run'] = folder / 'finished_run'
    finished.mkdir()
    (finished / 'iter_2.pth').write_bytes(whole.read_bytes())
    (finished / 'last_checkpoint').write_text(str(finished / 'iter_2.pth'))
    photos = paths['photos'] = folder / 'photos'
    (photos / 'vis').mkdir(parents=True)
    Image.fromarray(np.full((32, 48, 3), 90, np.uint8)).save(photos / 'vis' / 'image.png')
    return {name: str(path) for name, path in paths.items()}


def listing(folder: Path) -> List[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*'))


def contents(folder: Path) -> Dict[str, str]:
    """The SHA-256 of each regular file under ``folder`` (links and FIFOs not followed)."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in folder.rglob('*') if stat.S_ISREG(path.lstat().st_mode)}


def row_id(row: Row) -> str:
    tool, args, _ = row
    return f'{Path(tool).stem}:{" ".join(args)[:70]}'


@pytest.mark.parametrize('row', ROWS, ids=[row_id(row) for row in ROWS])
def test_each_bad_input_is_one_line_and_writes_nothing(row, bad, tmp_path, monkeypatch, capsys):
    tool, args, expected = row
    for name, path in bad.items():  # not str.format: some expected lines hold braces of their own
        expected = expected.replace('{' + name + '}', path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, 'argv', [tool, *(arg.format(**bad) for arg in args)])
    folder = Path(bad['bad'])
    before = listing(folder), contents(folder)
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(REPO / 'tools' / tool), run_name='__main__')
    code = exited.value.code
    assert isinstance(code, str) and code.startswith('error: ') and '\n' not in code and expected in code, code
    assert capsys.readouterr() == ('', ''), 'the tool printed more than its line'
    assert (listing(folder), contents(folder)) == before and listing(tmp_path) == [], 'the tool wrote a file'


@pytest.mark.parametrize('script,args,expected', SCRIPT_ROWS, ids=[' '.join([row[0], *row[1]]) for row in SCRIPT_ROWS])
def test_the_launch_scripts_end_with_one_line_before_torchrun(script, args, expected, bad, tmp_path):
    result = run_script(REPO / 'tools' / script, [arg.format(**bad) for arg in args], timeout=60)
    assert result.returncode == 1 and result.stdout == '', result.stderr[-3000:]
    assert result.stderr.count('\n') == 1 and result.stderr.startswith('error: ') and expected in result.stderr, (
        result.stderr[-3000:])


@pytest.mark.parametrize('library,config,lock', LAUNCHER_ROWS)
def test_the_launchers_end_with_one_line_on_a_bad_lock(library, config, lock, bad):
    work_dir = Path(bad[lock])
    before = listing(work_dir)
    result = run_script(library_train_script(library), [config, '--work-dir', work_dir], timeout=600)
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f'error: {work_dir / LOCK_FILE} ')
    assert LOCKS[lock] in result.stderr.strip().splitlines()[-1]
    assert listing(work_dir) == before


def test_a_second_test_run_writing_the_same_out_refuses(det_work_dir, demo_root, tmp_path, monkeypatch, capsys):
    """Two tools/test.py --out same.pkl at once: the later one ends before it starts, the file
    left to the first; once that run has been killed, its claim blocks nobody."""
    shutil.copy(det_work_dir / 'iter_4.pth', tmp_path / 'ck.pth')
    shutil.copytree(demo_root / 'coco', tmp_path / 'coco')
    out = tmp_path / 'same.pkl'
    args = [str(arg) for arg in (DET_CONFIG, tmp_path / 'ck.pth', '--work-dir', tmp_path / 'work', '--out', out,
                                 '--cfg-options', *det_data_options(tmp_path))]
    hold = ('import sys, time; from mmrmt.run_claim import RunClaim; claim = RunClaim(sys.argv[1], "", ""); '
            'claim.take(); print("held", flush=True); time.sleep(600)')
    first = subprocess.Popen([sys.executable, '-c', hold, claim_path(str(out))], cwd=REPO, stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))  # the run writing same.pkl
    try:
        assert first.stdout.readline() == 'held\n'
        message = exit_message('test.py', args, monkeypatch, capsys)
        assert message.startswith(f'error: --out {out} is being written by another run (pid {first.pid} on ')
        assert message.endswith('wait for it to end, or choose another --out')
        assert not out.exists() and not (tmp_path / 'work').exists()
    finally:
        first.kill()
        first.wait()
    monkeypatch.setattr(sys, 'argv', ['test.py', *args])
    runpy.run_path(str(REPO / 'tools' / 'test.py'), run_name='__main__')
    assert len(pickle.loads(out.read_bytes())) == 8  # the test set's predictions
    assert not Path(claim_path(str(out))).exists() and not list(tmp_path.glob('.same.pkl.*'))


DOCS = REPO / 'docs' / 'troubleshooting.md'
TABLE_START = '<!-- probe table: generated by tests/tools/test_bad_inputs_probe.py -->'
TABLE_END = '<!-- probe table end -->'
REGENERATE = 'PYTHONPATH=tests:tests/tools python tests/tools/test_bad_inputs_probe.py'


def table_markdown() -> str:
    """The probe's rows as the table of docs/troubleshooting.md."""
    def cell(text: str) -> str:
        text = text if len(text) <= 90 else text[:87] + '...'
        return '`' + text.replace('|', '\\|').replace('`', "'") + '`'
    lines = ['| # | tool | arguments | the `error:` line holds |', '|---|---|---|---|']
    for number, (tool, args, expected) in enumerate(ROWS, 1):
        lines.append(f'| {number} | {tool} | {cell(" ".join(args))} | {cell(expected)} |')
    for number, row in enumerate(LAUNCHER_ROWS, len(ROWS) + 1):
        library, config, lock = row.values
        args = f'{Path(config).name} --work-dir {{{lock}}}'
        lines.append(f'| {number} | {library}/.mim/tools/train.py | {cell(args)} | {cell(LOCKS[lock])} |')
    for number, (script, args, expected) in enumerate(SCRIPT_ROWS, len(ROWS) + len(LAUNCHER_ROWS) + 1):
        shown = ' '.join(arg or "''" for arg in args)
        lines.append(f'| {number} | {script} | {cell(shown)} | {cell(expected)} |')
    return '\n'.join(lines)


def test_the_docs_mirror_the_table():
    text = DOCS.read_text()
    assert TABLE_START in text and TABLE_END in text, f'regenerate: {REGENERATE}'
    assert text.split(TABLE_START)[1].split(TABLE_END)[0].strip() == table_markdown(), (
        f'the table differs: {REGENERATE} rewrites it')


def test_every_tool_has_a_row():
    scripts = {os.path.relpath(path, REPO / 'tools') for folder in ('tools', 'demo')
               for path in (REPO / folder).rglob('*.py')}
    assert {tool for tool, _, _ in ROWS} == scripts


if __name__ == '__main__':  # rewrite the table of docs/troubleshooting.md
    before, rest = DOCS.read_text().split(TABLE_START)
    DOCS.write_text(f'{before}{TABLE_START}\n{table_markdown()}\n{TABLE_END}{rest.split(TABLE_END)[1]}')

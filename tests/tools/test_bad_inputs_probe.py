"""The bad-input probe: every tool, and mmdet's and mmseg's own train.py, given inputs users get
wrong, ends with one `error:` line naming the problem, exit status non-zero, nothing written.

Each row of :data:`ROWS` is (tool, arguments, a part of the expected line). Arguments name the
bad files of the ``bad`` fixture as ``{name}``. A row is
GOOD when the tool exits with exactly one line, starting ``error:`` and holding the expected
part, printed nothing else, and left the folder it ran in as it was; POOR when the line is
right but comes late or among other lines (allowed only for the rows of :data:`POOR`); BAD
otherwise (a traceback, a hang, exit 0, a file written). The tools run in this process
(``runpy``, as their ``__main__``), the launchers in subprocesses. docs/troubleshooting.md
mirrors the table (:func:`table_markdown`; a test keeps the two equal).
"""
import json
import os
import pickle
import runpy
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest
import torch
from PIL import Image

from mmrmt.engine.work_dir_lock import LOCK_FILE
from helpers.onnx_graphs import matmul_graph, relocated
from tool_process import DET_CONFIG, REPO, SEG_CONFIG, library_train_script, run_script

#: The rows whose right line comes late or among other lines (at most 5 may).
POOR: Dict[str, str] = {}

SAVED_CONFIGS = {
    'unary': ('a = ' + '-' * 100_000 + '1', 'the sign - is not before a number'),
    'attributes': ('a = x' + '.b' * 100_000, "the operator '.' is not part of a literal"),
    'sum': ('a = ' + '+'.join(['1'] * 300_000), "the operator '+' is not part of a literal"),
    'nested': ('a = ' + '[' * 100_000 + ']' * 100_000, 'brackets nested more than 50 deep'),
    'list_key': ('a = {[1]: 2}', 'a list cannot be a dict key'),
    'set_in_set': ('a = {{1}}', 'a set cannot be a dict key or set element'),
    'inf': ('gpu_ids = 1e999', 'a number too large to be finite'),
    'hex': ('a = 0x' + 'f' * 5000, 'a number of 5,002 characters'),
    'template': ("work_dir = '{{ fileDirname }}'", "the string holds the template '{{ fileDirname }}'"),
    'code': ("a = __import__('os').system('touch PWNED')", "the operator '.' is not part of a literal"),
    'long': ('a = [' + '1, ' * 400_000 + ']', 'characters long (at most 1,000,000 are read)'),
}

ONNX_FILES = {
    'onnx_zip': 'is a zip archive (a PyTorch checkpoint?), not an ONNX model',
    'onnx_pickle': 'is a pickle (a PyTorch checkpoint?), not an ONNX model',
    'onnx_cut': 'is not a complete ONNX model (truncated',
    'onnx_empty': 'is empty (0 bytes)',
    'onnx_text': 'is not a complete ONNX model',
    'onnx_absolute': "an absolute path; onnxruntime reads external data only from files in the model's folder",
    'onnx_up': "outside the model's folder",
    'onnx_link': "outside the model's folder",
    'onnx_gone': 'which does not exist',
    'onnx_missing': 'not found: ',
}

LOCKS = {
    'lock_fifo': 'is a named pipe (FIFO), not a lock file mmrmt wrote',
    'lock_folder': 'is a folder, not a lock file mmrmt wrote',
    'lock_dangling': 'which does not exist, not a lock file mmrmt wrote',
    'lock_text_pid': 'JSON whose pid 12 is not a process id',
    'lock_wide_pid': f'JSON whose pid {2 ** 70} is not a process id',
}

CHECKPOINTS = {
    'ckpt_empty': 'the file is empty (0 bytes)',
    'ckpt_text': 'it is neither a zip archive nor a pickle',
    'ckpt_cut': 'the file is truncated or corrupted',
    'ckpt_missing': 'not found: ',
}

CONFIGS = {
    'cfg_missing': 'config file not found: ',
    'cfg_syntax': "syntax error in config {bad}/syntax_base.py, line 1: '(' was never closed",
    'cfg_circular': 'its _base_ files are circular',
    'cfg_self': 'its _base_ files are circular',
}

OPTIONS = {
    '模型.x=1': "--cfg-options 模型.x: the config has no '模型'",
    'modle.backbone.arch=t': "the config has no 'modle'; the nearest is model",
    'param_scheduler=[dict(type=LinearLR,': "the '[' at character 1 of the value is never closed",
    'end=2)]': "the ')' at character 2 of the value closes no '('",
    'model.backbone.nonexistent=3': "RMT (model.backbone) has no 'nonexistent'",
    'train_dataloader.batch_size=0': 'train_dataloader.batch_size must be an int >= 1, got 0',
    'model.backbone.arch': '--cfg-options takes KEY=VALUE pairs',
}

Row = Tuple[str, List[str], str]

#: The fields of a lock file other than the pid.
LOCK_FIELDS = dict(host='h', started='s', command='c')


def config_tools(config: str) -> Dict[str, List[str]]:
    """Every tool that takes a config, with ``config`` and otherwise valid arguments (the outputs
    under the folder the tool runs in)."""
    return {
        'train.py': [config, '--work-dir', 'work'],
        'test.py': [config, '{ckpt_missing}', '--work-dir', 'work'],
        'analysis_tools/get_flops.py': [config, '--shape', '64'],
        'analysis_tools/visualize_decay.py': [config, '--image', '{image}', '--out', 'decay.png'],
        'deployment/pytorch2onnx.py': [config, '--shape', '64', '64', '--out', 'model.onnx'],
        'deployment/test_onnx.py': [config, '{onnx_whole}', '--work-dir', 'work'],
        'deployment/quantize_onnx.py': ['{onnx_whole}', '--config', config, '--out', 'int8.onnx'],
    }


def rows() -> List[Row]:
    """The probe's table."""
    table: List[Row] = []
    takes_options = config_tools('{det}')
    for tool, args in config_tools('{cfg}').items():
        for name, line in CONFIGS.items():
            table.append((tool, [arg.replace('{cfg}', '{' + name + '}') for arg in args], line))
    for tool, args in takes_options.items():
        for option, line in OPTIONS.items():
            if option.startswith('train_dataloader') and tool != 'train.py':
                continue  # only train reads the training loader's batch size
            table.append((tool, [*args, '--cfg-options', option], line))
    table += [
        ('../demo/image_demo.py', ['{image}', '{' + name + '}', '--out-dir', 'out'], line)
        for name, line in CONFIGS.items()]
    table += [('analysis_tools/benchmark.py', ['{' + name + '}', '--mode', 'infer'], line)
              for name, line in CONFIGS.items() if name != 'cfg_syntax']
    for name, line in CHECKPOINTS.items():
        table += [
            ('test.py', ['{det}', '{' + name + '}', '--work-dir', 'work'], line),
            ('train.py', ['{det}', '--work-dir', 'work', '--resume', '{' + name + '}'], line),
            ('train.py', ['{det}', '--work-dir', 'work', '--cfg-options', 'load_from={' + name + '}'], line),
            ('analysis_tools/visualize_decay.py', ['{det}', '--image', '{image}', '--out', 'd.png', '--weights',
                                                   '{' + name + '}'], line),
            ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--out', 'm.onnx', '--weights',
                                            '{' + name + '}'], line),
            ('../demo/image_demo.py', ['{image}', '{det}', '--weights', '{' + name + '}', '--out-dir', 'out'], line),
            ('model_converters/rmt_to_mmrmt.py', ['{' + name + '}', 'converted.pth'], line),
            ('model_converters/rest_detectron2_to_mmrmt.py', ['{' + name + '}', 'converted.pth'], line),
        ]
    for name, (_, line) in SAVED_CONFIGS.items():
        table += [
            ('train.py', ['{det}', '--work-dir', 'work', '--resume', '{resume_' + name + '}'], line),
            ('model_converters/rmt_to_mmrmt.py', ['{trained_' + name + '}', 'converted.pth'], line),
        ]
    for name, line in ONNX_FILES.items():
        onnx = '{' + name + '}'
        table += [
            ('analysis_tools/benchmark.py', ['--backbone', 'rmt-t', '--mode', 'infer', '--onnx', onnx], line),
            ('deployment/profile_onnx.py', [onnx], line),
            ('deployment/quantize_onnx.py', [onnx, '--config', '{det}', '--out', 'int8.onnx'], line),
            ('deployment/test_onnx.py', ['{det}', onnx, '--work-dir', 'work'], line),
        ]
    amp_refusal = "mmcv's CPU nms and RoIAlign take float32 only"
    table += [
        ('analysis_tools/benchmark.py', ['{det}', '--mode', 'infer', '--amp', 'bf16'], amp_refusal),
        ('analysis_tools/benchmark.py', ['{det}', '--mode', 'train', '--amp', 'fp16'], amp_refusal),
        ('deployment/test_onnx.py', ['{det}', '{onnx_backbone}', '--work-dir', 'work'],
         'is a backbone-only graph (outputs feature_0); this tool evaluates a whole model'),
        ('deployment/quantize_onnx.py', ['{onnx_whole}', '--config', '{det}', '--out', 'int8.onnx', '--images',
                                         '{images_unreadable}'], 'image file(s) are all unreadable'),
        ('deployment/quantize_onnx.py', ['{onnx_whole}', '--config', '{det}', '--out', 'int8.onnx', '--images',
                                         '{no_images}'], 'holds no .jpg, .jpeg, .png or .bmp file'),
        ('deployment/pytorch2onnx.py', ['{det}', '--shape', '64', '64', '--batch', '4', '--images-per-run', '3',
                                        '--out', 'm.onnx'], 'give a positive divisor of --batch 4'),
    ]
    for name, line in LOCKS.items():
        table += [('train.py', ['{det}', '--work-dir', '{' + name + '}'], line),
                  ('test.py', ['{det}', '{ckpt_text}', '--work-dir', '{' + name + '}'], line)]
    return table


#: mmdet's and mmseg's own train.py (subprocesses: slow, so few rows).
LAUNCHER_ROWS = [
    ('mmdet', DET_CONFIG, 'lock_fifo'), ('mmdet', DET_CONFIG, 'lock_dangling'),
    ('mmseg', SEG_CONFIG, 'lock_folder'), ('mmseg', SEG_CONFIG, 'lock_wide_pid'),
]

ROWS = rows()


def checkpoint_with(meta: dict) -> dict:
    return {'state_dict': {'backbone.patch_embed.proj.0.weight': torch.zeros(1)}, 'meta': meta,
            'message_hub': {}, 'optimizer': {}}


@pytest.fixture(scope='module')
def bad(tmp_path_factory) -> Dict[str, str]:
    """The bad files the rows name, in one folder (``{bad}``)."""
    folder = tmp_path_factory.mktemp('bad_inputs')
    paths = dict(bad=folder, det=DET_CONFIG, image=folder / 'image.png')
    Image.fromarray(np.full((32, 48, 3), 128, np.uint8)).save(folder / 'image.png')
    (folder / 'syntax_base.py').write_text('model = dict(\n')
    (folder / 'syntax.py').write_text("_base_ = ['./syntax_base.py']\n")
    (folder / 'circular_a.py').write_text("_base_ = ['./circular_b.py']\n")
    (folder / 'circular_b.py').write_text("_base_ = ['./circular_a.py']\n")
    (folder / 'self.py').write_text("_base_ = ['./self.py']\n")
    paths.update(cfg_missing=folder / 'none.py', cfg_syntax=folder / 'syntax.py', cfg_circular=folder / 'circular_a.py',
                 cfg_self=folder / 'self.py')
    (folder / 'empty.pth').touch()
    (folder / 'text.pth').write_text('weights are on the shared drive\n')
    whole = folder / 'whole.pth'
    torch.save(checkpoint_with({'iter': 2}), whole)
    (folder / 'cut.pth').write_bytes(whole.read_bytes()[:len(whole.read_bytes()) // 2])
    paths.update(ckpt_empty=folder / 'empty.pth', ckpt_text=folder / 'text.pth', ckpt_cut=folder / 'cut.pth',
                 ckpt_missing=folder / 'none.pth')
    for name, (text, _) in SAVED_CONFIGS.items():
        torch.save(checkpoint_with({'iter': 2, 'config': text, 'cfg': text}), folder / f'resume_{name}.pth')
        torch.save(checkpoint_with({'cfg': text, 'mmengine_version': '0.10.7'}), folder / f'trained_{name}.pth')
        paths.update({f'{kind}_{name}': folder / f'{kind}_{name}.pth' for kind in ('resume', 'trained')})
    graphs = folder / 'graphs'
    graphs.mkdir()
    source = matmul_graph(graphs / 'external.onnx', external='external.bin')
    (folder / 'secret.bin').write_bytes(bytes(36))
    (graphs / 'link.bin').symlink_to(folder / 'secret.bin')
    torch.save({'w': torch.zeros(1)}, graphs / 'zip.onnx')
    (graphs / 'pickle.onnx').write_bytes(pickle.dumps({'w': 1}))
    whole_graph = matmul_graph(graphs / 'whole.onnx', output='seg_logits').read_bytes()
    (graphs / 'cut.onnx').write_bytes(whole_graph[:len(whole_graph) // 2])
    (graphs / 'empty.onnx').touch()
    (graphs / 'text.onnx').write_text('not a model')
    paths.update(onnx_zip=graphs / 'zip.onnx', onnx_pickle=graphs / 'pickle.onnx', onnx_cut=graphs / 'cut.onnx',
                 onnx_empty=graphs / 'empty.onnx', onnx_text=graphs / 'text.onnx',
                 onnx_absolute=relocated(source, str(folder / 'secret.bin'), graphs / 'absolute.onnx'),
                 onnx_up=relocated(source, '../secret.bin', graphs / 'up.onnx'),
                 onnx_link=relocated(source, 'link.bin', graphs / 'link.onnx'),
                 onnx_gone=relocated(source, 'gone.bin', graphs / 'gone.onnx'),
                 onnx_missing=graphs / 'none.onnx', onnx_whole=graphs / 'whole.onnx',
                 onnx_backbone=matmul_graph(graphs / 'backbone.onnx'))
    images = folder / 'unreadable_images'
    images.mkdir()
    for index in range(2):
        (images / f'{index}.jpg').write_bytes(b'\xff\xd8\xff\xe0 cut short')
    paths.update(images_unreadable=images, no_images=graphs)
    locks = {'lock_fifo': lambda path: os.mkfifo(path), 'lock_folder': lambda path: path.mkdir(),
             'lock_dangling': lambda path: path.symlink_to(path.parent / 'gone.json'),
             'lock_text_pid': lambda path: path.write_text(json.dumps(dict(LOCK_FIELDS, pid='12'))),
             'lock_wide_pid': lambda path: path.write_text(json.dumps(dict(LOCK_FIELDS, pid=2 ** 70)))}
    for name, make in locks.items():
        (folder / name).mkdir()
        make(folder / name / LOCK_FILE)
        paths[name] = folder / name
    return {name: str(path) for name, path in paths.items()}


def listing(folder: Path) -> List[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*'))


def row_id(row: Row) -> str:
    tool, args, _ = row
    return f'{Path(tool).stem}:{" ".join(args)[:70]}'


def classify(tool: str, args: List[str], expected: str, bad: Dict[str, str], folder: Path, monkeypatch,
             capsys) -> Tuple[str, str]:
    """(GOOD / POOR / BAD, what the tool ended with) of one row, run in ``folder``."""
    filled = [arg.format(**bad) for arg in args]
    expected = expected.replace('{bad}', bad['bad'])
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, 'argv', [tool, *filled])
    before = listing(Path(bad['bad']))
    try:
        runpy.run_path(str(REPO / 'tools' / tool), run_name='__main__')
        return 'BAD', 'exit status 0'
    except SystemExit as exited:
        code = exited.code
    except Exception as error:  # noqa: BLE001 (a traceback is what the probe finds)
        return 'BAD', f'traceback: {type(error).__name__}: {str(error)[:200]}'
    captured = capsys.readouterr()
    if not isinstance(code, str) or not code.startswith('error: ') or '\n' in code or expected not in code:
        return 'BAD', f'exit {code!r}'
    written = listing(folder) + [name for name in listing(Path(bad['bad'])) if name not in before]
    if written:
        return 'BAD', f'{code} (and wrote {written[:3]})'
    if captured.out or captured.err:
        return 'POOR', f'{code} (after {len((captured.out + captured.err).splitlines())} other lines)'
    return 'GOOD', code


@pytest.mark.parametrize('row', ROWS, ids=[row_id(row) for row in ROWS])
def test_each_bad_input_is_one_line_and_writes_nothing(row, bad, tmp_path, monkeypatch, capsys):
    tool, args, expected = row
    verdict, ended = classify(tool, args, expected, bad, tmp_path, monkeypatch, capsys)
    allowed = {'GOOD', 'POOR'} if row_id(row) in POOR else {'GOOD'}
    assert verdict in allowed, f'{verdict}: {ended}'


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


DOCS = REPO / 'docs' / 'troubleshooting.md'
TABLE_START = '<!-- probe table: generated by tests/tools/test_bad_inputs_probe.py -->'
TABLE_END = '<!-- probe table end -->'
REGENERATE = 'PYTHONPATH=tests:tests/tools python tests/tools/test_bad_inputs_probe.py'


def table_markdown() -> str:
    """The probe's rows as the table of docs/troubleshooting.md (POOR rows marked)."""
    def cell(text: str) -> str:
        text = text if len(text) <= 90 else text[:87] + '...'
        return '`' + text.replace('|', '\\|').replace('`', "'") + '`'
    lines = ['| # | tool | arguments | the `error:` line holds | verdict |', '|---|---|---|---|---|']
    for number, (tool, args, expected) in enumerate(ROWS, 1):
        poor = POOR.get(row_id((tool, args, expected)))
        verdict = f'POOR: {poor}' if poor else 'GOOD'
        lines.append(f'| {number} | {tool} | {cell(" ".join(args))} | {cell(expected)} | {verdict} |')
    for number, (library, config, lock) in enumerate(LAUNCHER_ROWS, len(ROWS) + 1):
        args = f'{Path(config).name} --work-dir {{{lock}}}'
        lines.append(f'| {number} | {library}/.mim/tools/train.py | {cell(args)} | {cell(LOCKS[lock])} | GOOD |')
    return '\n'.join(lines)


def test_the_docs_mirror_the_table():
    text = DOCS.read_text()
    assert TABLE_START in text and TABLE_END in text, f'regenerate: {REGENERATE}'
    assert text.split(TABLE_START)[1].split(TABLE_END)[0].strip() == table_markdown(), (
        f'the table differs: {REGENERATE} rewrites it')


def test_the_probe_is_large_and_poor_rarely():
    assert len(ROWS) + len(LAUNCHER_ROWS) >= 150
    assert len(POOR) <= 5 and set(POOR) <= {row_id(row) for row in ROWS}


if __name__ == '__main__':  # rewrite the table of docs/troubleshooting.md
    before, rest = DOCS.read_text().split(TABLE_START)
    DOCS.write_text(f'{before}{TABLE_START}\n{table_markdown()}\n{TABLE_END}{rest.split(TABLE_END)[1]}')

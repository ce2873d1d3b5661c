"""``.safetensors`` files read as ``.pth`` files do, by every loader, and written by
the converters (weights only, with the file's SHA-256): a round trip is bit-exact,
a bad file is one line, and nothing is unpickled."""
import hashlib
import os
import re
import stat

import pytest
import torch
from mmengine.runner.checkpoint import _load_checkpoint, load_checkpoint

import mmrmt.engine  # noqa: F401  (wraps mmengine's loaders: load_from)
from mmrmt.checkpoint import load_model_weights, read_checkpoint, save_checkpoint
from mmrmt.models.backbones import RMT
from helpers.checkpoints import pretrained
from helpers.tool_modules import exit_line, import_tool
from helpers.upstream_layouts import random_upstream_state_dict

rmt_to_mmrmt = import_tool('tools/model_converters/rmt_to_mmrmt.py')


@pytest.fixture()
def no_unpickling(monkeypatch):
    """torch.load (torch's unpickler, weights-only or not) fails if anything calls it."""
    def refuse(*args, **kwargs):
        raise AssertionError('torch.load was called on a safetensors file')

    monkeypatch.setattr(torch, 'load', refuse)


@pytest.fixture(scope='module')
def converted(tmp_path_factory):
    """The authors' RMT-T classifier file converted to a backbone file in both formats."""
    folder = tmp_path_factory.mktemp('converted')
    torch.save({'model': random_upstream_state_dict('rmt-t')}, folder / 'rmt_t3.pth')
    for suffix in ('.pth', '.safetensors'):
        rmt_to_mmrmt.main([str(folder / 'rmt_t3.pth'), str(folder / f'rmt-t{suffix}')])
    return folder


def test_the_converter_writes_safetensors_by_suffix_and_prints_its_sha256(tmp_path, capsys):
    torch.save({'model': random_upstream_state_dict('rmt-t')}, tmp_path / 'rmt_t3.pth')
    dst = tmp_path / 'rmt-t.safetensors'
    rmt_to_mmrmt.main([str(tmp_path / 'rmt_t3.pth'), str(dst)])
    assert dst.read_bytes()[8:9] == b'{'  # a safetensors header, no pickle, no zip
    digest = hashlib.sha256(dst.read_bytes()).hexdigest()
    assert f'{dst}: sha256 {digest}' in capsys.readouterr().out.splitlines()


def test_the_round_trip_is_bit_exact_through_every_loader(converted, no_unpickling):
    path = str(converted / 'rmt-t.safetensors')
    expected = read_checkpoint(path)
    assert expected['meta'] == dict(arch='t', source=str(converted / 'rmt_t3.pth'))
    weights = expected['state_dict']
    through_init_cfg = RMT('t', init_cfg=pretrained(path))  # init_cfg=dict(type='Pretrained')
    through_init_cfg.init_weights()
    through_load_from = RMT('t')  # load_from: mmengine's loader, as the Runner calls it
    load_checkpoint(through_load_from, path, strict=False)
    assert _load_checkpoint(path)['meta'] == expected['meta']
    for model in (through_init_cfg, through_load_from):
        own = model.state_dict()
        assert all(torch.equal(own[key], value) for key, value in weights.items())


def test_the_safetensors_file_holds_what_the_pth_holds(converted):
    pth = torch.load(converted / 'rmt-t.pth', weights_only=True)
    safetensors = read_checkpoint(str(converted / 'rmt-t.safetensors'))
    assert safetensors['meta'] == pth['meta']
    assert sorted(safetensors['state_dict']) == sorted(pth['state_dict'])
    assert all(torch.equal(safetensors['state_dict'][key], value) for key, value in pth['state_dict'].items())


def test_tools_weights_load_a_safetensors_file_strictly(tmp_path, no_unpickling):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    path = str(tmp_path / 'model.safetensors')
    save_checkpoint(dict(state_dict=model.state_dict(), meta=dict(classes=['a', 'b'])), path, safetensors=True)
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    checkpoint = read_checkpoint(path)
    load_model_weights(other, checkpoint, path)  # what --weights runs
    assert checkpoint['meta'] == dict(classes=['a', 'b'])
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), other.state_dict().values()))


def test_a_truncated_safetensors_file_is_one_line(converted, tmp_path):
    whole = (converted / 'rmt-t.safetensors').read_bytes()
    truncated = tmp_path / 'rmt-t.safetensors'
    truncated.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ValueError, match=rf'^{re.escape(str(truncated))} is not a readable safetensors file '
                                         r'\(truncated or corrupted\?\): \w+: [^\n]+$'):
        read_checkpoint(str(truncated))


def test_a_pth_named_safetensors_is_one_line(converted, tmp_path):
    misnamed = tmp_path / 'rmt-t.safetensors'
    misnamed.write_bytes((converted / 'rmt-t.pth').read_bytes())
    with pytest.raises(ValueError, match=rf'^{re.escape(str(misnamed))} is not a readable safetensors file: '
                                         r'a PyTorch checkpoint \(zip archive or pickle\): name it \.pth$'):
        RMT('t', init_cfg=pretrained(str(misnamed))).init_weights()


def test_a_safetensors_file_named_pth_is_read_by_its_header(converted, tmp_path, no_unpickling):
    misnamed = tmp_path / 'rmt-t.pth'
    misnamed.write_bytes((converted / 'rmt-t.safetensors').read_bytes())
    assert read_checkpoint(str(misnamed))['meta']['arch'] == 't'


def test_a_safetensors_file_of_another_variant_is_one_line(converted):
    path = str(converted / 'rmt-t.safetensors')
    with pytest.raises(ValueError, match=rf'^{re.escape(path)} does not fit RMT: \d+ tensors differ in shape .*'
                                         r'check `arch`'):
        RMT('s', init_cfg=pretrained(path)).init_weights()


def test_the_converter_refuses_a_truncated_source_in_one_line(converted, tmp_path):
    whole = (converted / 'rmt-t.safetensors').read_bytes()
    (tmp_path / 'bad.safetensors').write_bytes(whole[:100])
    line = exit_line(rmt_to_mmrmt.main, [str(tmp_path / 'bad.safetensors'), str(tmp_path / 'out.safetensors')])
    assert 'is not a readable safetensors file' in line and not (tmp_path / 'out.safetensors').exists()


@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_the_converters_files_have_the_usual_permissions(tmp_path, suffix):
    """The umask's mode, as any new file (safetensors' own writer would leave 0600)."""
    torch.save({'model': random_upstream_state_dict('rmt-t')}, tmp_path / 'rmt_t3.pth')
    umask = os.umask(0o022)
    try:
        rmt_to_mmrmt.main([str(tmp_path / 'rmt_t3.pth'), str(tmp_path / f'rmt-t{suffix}')])
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / f'rmt-t{suffix}').stat().st_mode) == 0o644


def test_an_upper_case_suffix_gets_a_safetensors_file(tmp_path):
    source = tmp_path / 'rmt_t3.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, source)
    dst = tmp_path / 'RMT-T.SAFETENSORS'
    rmt_to_mmrmt.main([str(source), str(dst)])
    assert dst.read_bytes()[8:9] == b'{'  # a safetensors header, not a torch zip ('PK')
    RMT('t', init_cfg=pretrained(str(dst))).init_weights()  # read as safetensors by name and by header
    assert _load_checkpoint(str(dst))['meta']['arch'] == 't'  # load_from: mmengine's loader, by its name

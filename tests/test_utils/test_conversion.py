"""mmrmt.utils.conversion, the converter scripts' whole flow (tools/model_converters/rmt_to_mmrmt.py and
rest_detectron2_to_mmrmt.py are its ``backbone_converter_main``): the authors' files in each layout become
backbone files that load through ``init_cfg``; other files, an existing destination and integer weights are
one line, and no file is destroyed (the scripts' runs on a training checkpoint are tests/tools')."""

import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from mmrmt.models.backbones import RMT, ResT
from mmrmt.utils import PreflightError, backbone_converter_main, converter_arguments, write_checked
from helpers.tool_modules import exit_line
from helpers.upstream_layouts import assert_backbone_file_loads, random_upstream_state_dict

rmt_to_mmrmt, rest_detectron2_to_mmrmt = (backbone_converter_main(backbone, 'Convert.') for backbone in (RMT, ResT))
pytestmark = pytest.mark.slow  # RMT-T and ResT-Small files written, read and loaded


def rmt_backbone_keys(classifier: dict) -> dict:
    """An RMT ImageNet state dict without its classifier."""
    return {key: value for key, value in classifier.items() if not key.startswith(('proj.', 'norm.', 'head.'))}


def test_rmt_classifier_file(tmp_path):
    classifier = random_upstream_state_dict('rmt-t')
    torch.save({'model': classifier}, tmp_path / 'rmt_t3.pth')
    rmt_to_mmrmt([str(tmp_path / 'rmt_t3.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch'] == 't'
    assert not any(key.startswith(('proj.', 'norm.', 'head.')) for key in saved['state_dict'])
    assert_backbone_file_loads(RMT, 't', tmp_path / 'out.pth', rmt_backbone_keys(classifier))


def test_rmt_mmdet2_detector_file(tmp_path):
    backbone = rmt_backbone_keys(random_upstream_state_dict('rmt-t', seed=1))
    backbone.update({f'extra_norms.{i}.{name}': torch.rand(channels)
                     for i, channels in enumerate((64, 128, 256, 512)) for name in ('weight', 'bias')})
    detector = {f'backbone.{key}': value for key, value in backbone.items()}
    detector.update({'neck.lateral_convs.0.conv.weight': torch.rand(256, 64, 1, 1),
                     'roi_head.bbox_head.fc_cls.weight': torch.rand(81, 1024)})
    torch.save({'state_dict': detector, 'meta': {'epoch': 36}}, tmp_path / 'maskrcnn_t.pth')
    rmt_to_mmrmt([str(tmp_path / 'maskrcnn_t.pth'), str(tmp_path / 'out.pth')])
    assert set(torch.load(tmp_path / 'out.pth', weights_only=True)['state_dict']) == set(backbone)
    assert_backbone_file_loads(RMT, 't', tmp_path / 'out.pth', backbone)


def test_other_files_are_refused(tmp_path):
    torch.save({'state_dict': {'conv1.weight': torch.rand(64, 3, 7, 7)}}, tmp_path / 'resnet.pth')
    assert exit_line(rmt_to_mmrmt, [tmp_path / 'resnet.pth', tmp_path / 'out.pth']).startswith(
        'error: not an RMT checkpoint')
    assert [path.name for path in tmp_path.iterdir()] == ['resnet.pth'], 'a file was left'
    torch.save({'model': random_upstream_state_dict('rest-small')}, tmp_path / 'rest_small.pth')
    assert exit_line(rest_detectron2_to_mmrmt, [tmp_path / 'rest_small.pth', tmp_path / 'out.pth']) == (
        "error: not a ResT detectron2 checkpoint: no keys start with 'backbone.bottom_up.'")


def test_a_training_checkpoint_of_another_backbone_is_refused(tmp_path):
    source = tmp_path / 'iter_4.pth'
    torch.save({'state_dict': {'backbone.layers.0.weight': torch.zeros(1)}, 'message_hub': {}, 'optimizer': {},
                'meta': {'mmengine_version': '0.10.7', 'cfg': "model = dict(backbone=dict(type='RMT'))\n"}}, source)
    assert exit_line(rest_detectron2_to_mmrmt, [source, tmp_path / 'out.pth']) == (
        f"error: {source} was trained with the backbone 'RMT', not ResT; use the converter of that backbone")
    assert not (tmp_path / 'out.pth').exists()


def assert_refused_and_untouched(args, expected: str, files) -> None:
    before = {path: path.read_bytes() for path in files}
    assert exit_line(rmt_to_mmrmt, args) == expected
    assert {path: path.read_bytes() for path in files} == before
    assert not list(Path(args[1]).parent.glob('.*.tmp')), 'a temporary file was left'


def test_an_invalid_source_leaves_the_destination(tmp_path):
    source, destination = tmp_path / 'notes.pth', tmp_path / 'out.pth'
    source.write_text('not a checkpoint')
    destination.write_bytes(b'the user\'s file')
    assert_refused_and_untouched([source, destination, '--force'], f"error: source {source} is not a readable "
                                 "PyTorch checkpoint: it is neither a zip archive nor a pickle (it starts with b'not a "
                                 "checkpoint'); give the path of a checkpoint file", [source, destination])


def test_an_existing_destination_needs_force(tmp_path):
    source, destination = tmp_path / 'rmt_t3.pth', tmp_path / 'out.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, source)
    destination.write_bytes(b'the user\'s file')
    assert_refused_and_untouched([source, destination], f'error: destination {destination} exists; choose another '
                                 'path, or add --force to replace it', [source, destination])
    rmt_to_mmrmt([str(source), str(destination), '--force'])
    assert torch.load(destination, weights_only=True)['meta']['arch'] == 't'


def test_a_read_only_folder_is_refused_before_the_source_is_read(tmp_path, read_only_folder):
    source, folder = tmp_path / 'notes.pth', read_only_folder
    source.write_text('not a checkpoint')
    (folder / 'out.pth').write_bytes(b'the user\'s file')
    folder.chmod(0o555)
    assert exit_line(rmt_to_mmrmt, [source, folder / 'out.pth', '--force']) == (
        f'error: destination {folder / "out.pth"} cannot be written: no new file can be made in {folder}; make '
        'it writable or choose another destination')
    assert (folder / 'out.pth').read_bytes() == b'the user\'s file'


@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_a_source_of_integers_is_one_line(tmp_path, suffix):
    """(Every kind of number against every other: tests/test_checkpoint/test_dtype_fit.py.)"""
    classifier = {key: value.to(torch.int8) if value.is_floating_point() else value
                  for key, value in random_upstream_state_dict('rmt-t').items()}
    source = tmp_path / f'rmt_t_quantised{suffix}'
    if suffix == '.safetensors':
        save_file(classifier, str(source))
    else:
        torch.save({'model': classifier}, source)
    message = exit_line(rmt_to_mmrmt, [source, tmp_path / 'out.pth'])
    assert re.match(rf'error: the conversion of {re.escape(str(source))} does not load back strictly, so '
                    r'\S+out.pth was not written: \S+ does not fit RMT: \d+ tensors hold another kind of number than '
                    r'the model\'s '
                    r'\(\S+: file int8 vs model float32', message), message
    assert sorted(path.name for path in tmp_path.iterdir()) == [source.name]


def test_the_same_source_gives_the_same_bytes(tmp_path):
    """The printed SHA-256 is the conversion's: the temporary file's name is not in the written archive."""
    source = tmp_path / 'rmt_t3.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, source)
    for name in ('a.pth', 'b.pth'):
        rmt_to_mmrmt([str(source), str(tmp_path / name)])
    assert (tmp_path / 'a.pth').read_bytes() == (tmp_path / 'b.pth').read_bytes()


def test_a_destination_the_writable_check_lets_through_is_one_line(tmp_path, monkeypatch):
    """Where ``os.access`` says yes but no file can be made (root under /proc), the refusal is one line."""
    source = tmp_path / 'rmt_t3.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, source)
    monkeypatch.setattr('os.access', lambda *args, **kwargs: True)
    message = exit_line(rmt_to_mmrmt, [source, '/proc/out.pth'])
    assert message.startswith('error: /proc/out.pth cannot be written: no new file can be made in /proc (') and (
        message.endswith('); choose another place')), message


def test_a_missing_source_says_what_to_give(tmp_path):
    source = tmp_path / 'none.pth'
    assert exit_line(rmt_to_mmrmt, [source, tmp_path / 'out.pth']) == (
        f'error: source {source} does not exist; give the path of a checkpoint file')
    assert list(tmp_path.iterdir()) == []


def test_force_is_described_as_the_converters_do_it():
    """--force replaces an existing destination, never the source (tests above: 'is the source' even with it)."""
    text = ' '.join(converter_arguments('Convert.').format_help().split())
    assert '--force replace an existing destination (never an input: the source or the config)' in text


def test_a_written_file_its_proof_refuses_is_one_line_and_replaces_nothing(tmp_path):
    """Both converters prove what they wrote through ``write_checked``: a refusal of the proof (its ``ValueError``)
    is the tools' one line, for rmt_upstream_trained_to_mmrmt.py's strict load as for the backbone converters'."""
    destination = tmp_path / 'out.pth'
    destination.write_bytes(b'the user\'s file')

    def refuse(written: str) -> None:
        raise ValueError(f'{written} does not fit M: 1 missing keys (w)')

    with pytest.raises(PreflightError) as error:
        write_checked(dict(state_dict={'w': torch.ones(1)}), 'src.pth', str(destination), refuse)
    assert re.fullmatch(rf'the conversion of src.pth does not load back strictly, so {re.escape(str(destination))} '
                        r'was not written: \S+\.tmp does not fit M: 1 missing keys \(w\)', str(error.value))
    assert [path.name for path in tmp_path.iterdir()] == ['out.pth']
    assert destination.read_bytes() == b'the user\'s file'

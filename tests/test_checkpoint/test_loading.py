"""Reading checkpoints: what is wrong with a file, said in one clean line."""
import pickle

import pytest
import torch

from mmrmt.checkpoint import CheckpointRefusedError, one_line_reason, read_checkpoint
from mmrmt.checkpoint.reading import checkpoint_file_problem


@pytest.mark.parametrize('error,expected', [
    (EOFError(), 'EOFError'),
    (RuntimeError('\n\n'), 'RuntimeError'),
    (ValueError('\x1b[1mbold\x1b[0m reason\nmore'), 'ValueError: bold reason'),
    (pickle.UnpicklingError(
        'Weights only load failed. \x1b[1mdo those steps only if you trust\x1b[0m.\n\t(1) advice\n'
        '\tWeightsUnpickler error: Unsupported global: GLOBAL foo.Bar was not an allowed global\n'
        'Check the documentation'),
     'UnpicklingError: Unsupported global: GLOBAL foo.Bar was not an allowed global'),
    (pickle.UnpicklingError('Weights only load failed. advice\nWeightsUnpickler error: \n\n'
                            'Unsupported operand 149\n\nCheck the documentation'),
     'UnpicklingError: Unsupported operand 149'),
])
def test_one_line_reason(error, expected):
    assert one_line_reason(error) == expected


def test_file_problems(tmp_path):
    (tmp_path / 'empty.pth').touch()
    torch.save({'w': torch.ones(3)}, tmp_path / 'good.pth')
    whole = (tmp_path / 'good.pth').read_bytes()
    (tmp_path / 'cut.pth').write_bytes(whole[:len(whole) - 30])
    (tmp_path / 'notes.pth').write_text('see the wiki')
    torch.save({'w': torch.ones(3)}, tmp_path / 'legacy.pth', _use_new_zipfile_serialization=False)

    def problem(name):
        return checkpoint_file_problem(str(tmp_path / name), (tmp_path / name).read_bytes()[:16])

    assert problem('empty.pth') == 'the file is empty (0 bytes)'
    assert problem('cut.pth') == 'the file is truncated or corrupted (its zip directory is missing)'
    assert problem('notes.pth') == "it is neither a zip archive nor a pickle (it starts with b'see the wiki')"
    assert problem('good.pth') is None
    assert problem('legacy.pth') is None
    assert torch.equal(read_checkpoint(str(tmp_path / 'legacy.pth'))['w'], torch.ones(3))


def test_refused_object_is_named_on_one_line(tmp_path):
    path = tmp_path / 'pickled_function.pth'
    torch.save({'w': torch.ones(1), 'hook': print}, path)
    with pytest.raises(CheckpointRefusedError) as error:
        read_checkpoint(str(path))
    message = str(error.value)
    assert message.startswith(f'checkpoint {path} holds Python objects besides weights (UnpicklingError: '
                              'Unsupported global: GLOBAL print was not an allowed global')
    assert '\n' not in message and '\x1b' not in message


def test_a_damaged_file_past_its_header_is_one_line(tmp_path):
    """A file whose first bytes pass for a checkpoint but which torch cannot read: the reason, with the likely
    cause (torch's own line for a cut pickle is a bare ``EOFError``)."""
    path = tmp_path / 'cut.pth'
    torch.save({'w': torch.ones(3)}, path, _use_new_zipfile_serialization=False)
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(ValueError) as error:
        read_checkpoint(str(path))
    assert str(error.value) == f'{path} is not a readable PyTorch checkpoint (truncated or corrupted?): EOFError'

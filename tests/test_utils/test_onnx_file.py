"""check_graph_file: the one check of an ONNX file every tool runs before opening it."""
import pickle

import pytest
import torch

from mmrmt.utils import PreflightError, check_graph_file
from helpers.onnx_graphs import matmul_graph, relocated

pytest.importorskip('onnxruntime')
EXPORT_HINT = 'export one with tools/deployment/pytorch2onnx.py'
KEEP_TOGETHER = "onnxruntime reads no external data from outside the model's folder, nor through links: keep the " \
                'model and its data files together in it'


def refusal(path, **kwargs) -> str:
    with pytest.raises(PreflightError) as error:
        check_graph_file(str(path), **kwargs)
    assert '\n' not in str(error.value)
    return str(error.value)


def test_a_graph_with_its_weights_inside_or_beside_it_passes(tmp_path):
    check_graph_file(str(matmul_graph(tmp_path / 'inside.onnx')))
    check_graph_file(str(matmul_graph(tmp_path / 'beside.onnx', external='beside.bin')))


def test_files_that_are_no_onnx_model(tmp_path):
    torch.save({'w': torch.zeros(2)}, tmp_path / 'model.pth')
    (tmp_path / 'model.pkl').write_bytes(pickle.dumps({'w': 1}))
    (tmp_path / 'empty.onnx').touch()
    whole = matmul_graph(tmp_path / 'whole.onnx').read_bytes()
    (tmp_path / 'cut.onnx').write_bytes(whole[:len(whole) // 2])
    for name, role in [('model.pth', '--onnx file'), ('model.pkl', 'ONNX model'), ('empty.onnx', 'ONNX model'),
                       ('cut.onnx', 'ONNX model')]:  # onnx's reason, in its words, inside the brackets
        line = refusal(tmp_path / name, role=role)
        assert line.startswith(f'{role} {tmp_path}/{name} is not a complete ONNX model (truncated, or another '
                               'format: ') and line.endswith(f'); {EXPORT_HINT}'), line
    assert refusal(tmp_path / 'none.onnx') == (f'ONNX model not found: {tmp_path}/none.onnx; give the path of an '
                                               '.onnx file, or export one with tools/deployment/pytorch2onnx.py')


def test_external_data_must_stay_in_the_models_folder(tmp_path):
    """onnx's checker refuses each (its reason is onnx's: one key word of it is asserted); the line names the
    model, the data's location and the fix."""
    folder = tmp_path / 'model'
    folder.mkdir()
    source = matmul_graph(folder / 'ok.onnx', external='ok.bin')
    (tmp_path / 'secret.bin').write_bytes(bytes(36))
    (folder / 'link.bin').symlink_to(tmp_path / 'secret.bin')
    (folder / 'linked').symlink_to(tmp_path)
    for location, word in [
            (str(tmp_path / 'secret.bin'), 'absolute'), ('../secret.bin', 'outside'),
            ('../../../../etc/hostname', 'outside'), ('link.bin', 'symbolic link'), ('gone.bin', 'not regular file'),
            ('linked/secret.bin', 'outside')]:  # a linked folder: refused from onnx 1.22, which names no location
        path = relocated(source, location, folder / 'moved.onnx')
        message = refusal(path)
        assert message.startswith(f'ONNX model {path}: ') and message.endswith(f'; {KEEP_TOGETHER}'), message
        assert word in message and (location in message or location.startswith('linked/')), message


def test_a_graph_of_an_opset_the_tools_do_not_read(tmp_path):
    """An opset-7 file was called truncated or of another format (issue 49): its opset is named, and the range."""
    import onnx
    from onnx import helper
    old = onnx.load(str(matmul_graph(tmp_path / 'old.onnx', opset=7)))
    old.graph.node.append(helper.make_node('Gelu', ['feature_0'], ['gelu']))  # opset 20's: not in opset 7
    onnx.save_model(old, str(tmp_path / 'old.onnx'))
    newest = onnx.defs.onnx_opset_version()
    assert refusal(tmp_path / 'old.onnx') == (
        f'ONNX model {tmp_path}/old.onnx is of ONNX opset 7, older than the tools read (opsets 11 to {newest}); '
        f'{EXPORT_HINT}')
    assert refusal(matmul_graph(tmp_path / 'new.onnx', opset=newest + 1)) == (
        f'ONNX model {tmp_path}/new.onnx is of ONNX opset {newest + 1}, newer than onnx {onnx.__version__} knows '
        f'(opsets 11 to {newest}); {EXPORT_HINT}')
    check_graph_file(str(matmul_graph(tmp_path / 'oldest.onnx', opset=11)))

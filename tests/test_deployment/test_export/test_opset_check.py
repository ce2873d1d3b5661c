"""check_opset: the opset an export is written in, each exporter's default unless one is asked for; one it does not
write is one line naming the exporter that does (pytorch2onnx.py's --exporter and --opset)."""
import pytest

from mmrmt.deployment.export import check_opset


@pytest.mark.parametrize('exporter,opset,written', [('torchscript', None, 17), ('torchscript', 11, 11),
                                                    ('dynamo', None, 18), ('dynamo', 20, 20)])
def test_the_default_or_the_opset_asked_for(exporter, opset, written):
    assert check_opset(exporter, opset) == written


@pytest.mark.parametrize('exporter,opset,message', [
    ('dynamo', 11, 'the dynamo exporter writes opsets 18 to 20, got --opset 11; --exporter torchscript writes it'),
    ('torchscript', 10, 'the torchscript exporter writes opsets 11 to 20, got --opset 10'),
    ('torchscript', 21, 'the torchscript exporter writes opsets 11 to 20, got --opset 21'),
])
def test_an_opset_the_exporter_does_not_write_is_one_line(exporter, opset, message):
    with pytest.raises(ValueError) as error:
        check_opset(exporter, opset)
    assert str(error.value) == message

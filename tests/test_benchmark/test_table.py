"""mmrmt.benchmark.format_table: every row's output error against the torch model's outputs."""
import argparse

import numpy as np

from mmrmt.benchmark import format_table


def test_every_rows_error_is_against_the_torch_model():
    """A graph whose runs agree with each other but not with torch shows its difference from torch."""
    args = argparse.Namespace(
        config=None, backbone='rmt-t', impl=['fast'], batch=1, onnx=['g.onnx'], runtime=['onnxruntime', 'openvino'],
        precision=['f32'], upstream_repo=None, amp=['none'])
    torch_out, graph_out = [np.ones((1, 4), np.float32)], [np.full((1, 4), 1.5, np.float32)]
    results = {'infer': {'fast': (1., 1, 1, torch_out), 'onnxruntime g.onnx': (0.5, 1, 1, graph_out),
                         'openvino f32 g.onnx': (0.5, 1, 1, graph_out)}}
    lines = format_table(args, results).splitlines()
    assert lines[0].endswith('| error vs fast |')
    assert [line.rsplit('|', 2)[1].strip() for line in lines[2:]] == ['0.0e+00', '5.0e-01', '5.0e-01']
    results['infer']['onnxruntime g.onnx'] = (0.5, 1, 1, [np.ones((1, 8), np.float32)])
    assert format_table(args, results).splitlines()[3].endswith('| other shapes |')

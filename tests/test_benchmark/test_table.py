"""mmrmt.benchmark.format_table: every row's output error against the torch model's outputs."""
import argparse

import numpy as np

from mmrmt.benchmark import format_table


def test_every_rows_error_is_against_the_torch_model():
    """A graph whose runs agree with each other but not with torch shows its difference from torch."""
    args = argparse.Namespace(
        config=None, backbone='rmt-t', impl=['fast'], batch=1, onnx=['g.onnx'], runtime=['onnxruntime', 'openvino'],
        precision=['f32'], upstream_repo=None, amp=['none'], compile=False)
    torch_out, graph_out = [np.ones((1, 4), np.float32)], [np.full((1, 4), 1.5, np.float32)]
    results = {'infer': {'fast': (1., 1, 1, torch_out), 'onnxruntime g.onnx': (0.5, 1, 1, graph_out),
                         'openvino f32 g.onnx': (0.5, 1, 1, graph_out)}}
    lines = format_table(args, results).splitlines()
    assert lines[0].endswith('| error vs fast |')
    assert [line.rsplit('|', 2)[1].strip() for line in lines[2:]] == ['0.0e+00', '5.0e-01', '5.0e-01']
    results['infer']['onnxruntime g.onnx'] = (0.5, 1, 1, [np.ones((1, 8), np.float32)])
    assert format_table(args, results).splitlines()[3].endswith('| other shapes |')


def test_compiled_rows_give_their_outputs_error_where_the_iterations_return_outputs():
    """--compile: a backbone's inference rows against the eager baseline's features; '-' where an iteration
    returns none (training, a config's predict)."""
    args = argparse.Namespace(config=None, backbone='rmt-t', impl=[None], batch=1, onnx=None, upstream_repo=None,
                              amp=['none'], compile=True)
    features = [np.full((1, 4), 2., np.float32)]
    results = {'infer': {'default': (1., 1, 1, features), 'default compiled': (0.5, 1, 1, [features[0] + 1e-6])},
               'train': {'default': (2., 1, 1, None), 'default compiled': (1., 1, 1, None)}}
    lines = format_table(args, results).splitlines()
    assert lines[0].endswith('| error vs default |')
    assert [line.rsplit('|', 2)[1].strip() for line in lines[2:]] == ['0.0e+00', '4.8e-07', '-', '-']
    assert lines[3].startswith('| default compiled | infer | 0.500 | 2.00 | 0 | 2.00x |')

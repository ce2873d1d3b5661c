"""Evaluate an exported whole model in onnxruntime or OpenVINO on its config's test set, as tools/test.py does.

The graph (tools/deployment/pytorch2onnx.py, float32 or quantize_onnx.py's
int8, either quantiser's) computes backbone, neck and heads; the model's own mmdet / mmseg code
does the rest around it -- data pipeline and preprocessor, box decoding,
NMS, masks, resizing to the original image -- and the config's test
evaluator reports the same metrics as tools/test.py (COCO bbox/segm mAP,
mIoU). A two-stage graph runs its RoI part on the RPN's proposals, then on
the detections (mmrmt/deployment/runtime/graph_predictor.py).

    python tools/deployment/test_onnx.py CONFIG MODEL.onnx [--work-dir DIR] [--threads N]
        [--runtime onnxruntime|openvino] [--precision f32|bf16] [--out FILE_OR_DIR [--force]]
        [--cfg-options KEY=VALUE ...]

``--out`` keeps the predictions as tools/test.py does: a detector's in a
.pkl file (the same layout as tools/test.py's, so the two can be compared),
a segmentor's label maps in a folder.

The graph must take the test pipeline's image size: a fixed-size export of
that size, or a --dynamic one. Needs the deploy extra (pip install -e ".[deploy]"),
and for --runtime openvino the openvino extra. --precision bf16 (OpenVINO
only) needs a CPU with AVX-512 BF16 or AMX.
"""
import argparse
from pathlib import Path
from typing import List, Optional

from mmrmt.deployment.runtime import add_runtime_arguments, check_runtime, runtime_label
from mmrmt.utils import (PreflightError, add_cfg_options, build_runner, check_data_paths, check_graph_file,
                         check_not_an_input, check_writable, dataloader_inputs, load_run_config, run_main)
from mmrmt.utils.model_kind import check_graph_fits_config
from mmrmt.utils.prediction_out import (add_prediction_dump, add_prediction_out_arguments, check_prediction_out,
                                        prediction_out_claimed)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='the config the graph was exported from')
    parser.add_argument('model', help='the .onnx file (a whole model, not --backbone-only)')
    add_runtime_arguments(parser)
    parser.add_argument('--work-dir', help='folder for the log and metrics (default: work_dirs/<config>_onnx)')
    parser.add_argument('--threads', type=int, help="the runtime's threads (default: torch's)")
    add_prediction_out_arguments(parser)
    add_cfg_options(parser, example='test_dataloader.dataset.indices=50')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.threads is not None and args.threads < 1:
        raise PreflightError(f'--threads must be at least 1, got {args.threads}')
    check_graph_file(args.model)
    check_runtime(args.runtime, args.precision)
    work_dir = args.work_dir or str(Path('work_dirs') / f'{Path(args.config).stem}_onnx')
    cfg = load_run_config(args.config, args.cfg_options, 'none', work_dir)
    check_graph_fits_config(args.model, cfg, args.config)
    inputs = [('the model', args.model), ('the config', args.config), *dataloader_inputs(cfg, ['test_dataloader'])]
    check_writable(cfg.work_dir, '--work-dir', is_dir=True)
    check_not_an_input(cfg.work_dir, '--work-dir', inputs)
    check_prediction_out(cfg, args.out, args.force, inputs)
    check_data_paths(cfg, ['test_dataloader', 'test_evaluator'])
    cfg.model.backbone.pop('init_cfg', None)  # the graph holds the weights: nothing to load
    cfg.load_from = None
    from mmrmt.deployment.runtime import GraphError, evaluate_graph
    with prediction_out_claimed(cfg, args.out):
        runner = build_runner(cfg)
        add_prediction_dump(runner, cfg, args.out, args.force)
        try:
            metrics = evaluate_graph(runner, args.model, args.threads, args.runtime, args.precision)
        except GraphError as error:
            raise PreflightError(str(error)) from None
    print(f'{args.model} in {runtime_label(args.runtime, args.precision)}: '
          + ', '.join(f'{key} {value:.4f}' if isinstance(value, float) else f'{key} {value}'
                      for key, value in metrics.items()))


if __name__ == '__main__':
    run_main(main)

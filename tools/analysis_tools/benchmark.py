"""Time and peak memory of a backbone or a config's whole model, per attention implementation.

Each contender (an implementation, an --onnx file in a runtime and precision,
the authors' ResT) runs in a fresh worker process, the workers taking turns
one iteration each; the table gives each one's median seconds, images per
second and peak memory, with ratios to the reference implementation
(:mod:`mmrmt.benchmark` says how each is measured; docs/benchmark.md gives
results).

Examples::

    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 16 --shape 224 224 --mode infer
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 1 --shape 800 1216 --mode train --repeats 3
    python tools/analysis_tools/benchmark.py configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py \\
        --impl fast reference --batch 2 --shape 800 1216 --device cuda --amp bf16
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer train --amp none bf16
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer --onnx rmt-t.onnx
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer --onnx rmt-t.onnx rmt-t_int8.onnx --runtime onnxruntime openvino --precision f32 bf16
    python tools/analysis_tools/benchmark.py --backbone rest-lite --impl fast --upstream-repo ../ResT \\
        --batch 1 --shape 800 1216 --mode train --threads 2
    python tools/analysis_tools/benchmark.py configs/rmt/retinanet_rmt-t_fpn_1x_coco.py --impl fast \\
        --batch 1 --shape 800 1216 --mode infer --amp none bf16 --compile --compile-options max_autotune=True

``--compile``: each torch row also compiled (rows 'fast compiled', ...; the ratios are to the eager
baseline): the backbone (and a config's neck) through torch.compile (Inductor), as tools/test.py and the
image demo compile it for inference (weights frozen, :mod:`mmrmt.utils.compiled_inference`); for
``--mode train`` without freezing, as mmengine compiles a config's training step. A compiled worker
compiles in one untimed iteration before the others start (its line, '# fast compiled (infer):
torch.compile: ... compiled in ... s', says how long and what came from Inductor's cache). With a
``--backbone``, inference rows also give their outputs' largest difference from the baseline's.
"""
import argparse
import importlib
import sys
import tempfile
from typing import List, Optional

import torch

from mmrmt.benchmark import (backbone_graphs, check_args, check_onnx_inputs, format_table, graph_batches,
                             save_upstream_weights, time_contenders)
from mmrmt.deployment.runtime import PRECISIONS, RUNTIMES, cpu_features
from mmrmt.utils import run_main
from mmrmt.utils.compiled_inference import add_compile_arguments, format_compile_options


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The arguments, checked (:func:`mmrmt.benchmark.check_args`)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', nargs='?', help='a config file: benchmark its whole model '
                        '(predict for infer, loss + backward for train)')
    parser.add_argument('--backbone', help="a backbone as TYPE-ARCH, e.g. 'rmt-t', 'rest-lite'")
    parser.add_argument('--impl', nargs='+', default=[None],
                        help="values of the backbone's impl to compare, e.g. 'fast reference' "
                             "(default: the backbone's default, no comparison)")
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--shape', type=int, nargs=2, default=(224, 224), metavar=('H', 'W'))
    parser.add_argument('--mode', nargs='+', choices=('infer', 'train'), default=['infer', 'train'])
    parser.add_argument('--repeats', type=int, default=5, help='timed iterations per implementation')
    parser.add_argument('--warmup', type=int, default=1, help='untimed iterations first')
    parser.add_argument('--amp', nargs='+', choices=('none', 'bf16', 'fp16', 'bf32'), default=['none'],
                        help="precisions to compare, a row each: autocast dtypes of the forward pass, e.g. "
                        "'none bf16', and 'bf32' (float32, oneDNN's GEMMs in bf16, CPU)")
    parser.add_argument('--device', default='cpu', help="'cpu' or 'cuda'")
    parser.add_argument('--threads', type=int, help='torch CPU threads (default: torch\'s)')
    parser.add_argument('--onnx', metavar='FILE', nargs='+',
                        help='also time these files (exported by tools/deployment/pytorch2onnx.py, '
                        'e.g. float32 and int8 from quantize_onnx.py) in --runtime (infer mode, CPU)')
    parser.add_argument('--runtime', nargs='+', choices=RUNTIMES, default=['onnxruntime'],
                        help='with --onnx: the runtimes each file runs in (default onnxruntime)')
    parser.add_argument('--precision', nargs='+', choices=PRECISIONS, default=['f32'],
                        help="with --onnx: f32 and/or bf16, torch's autocast and OpenVINO's inference "
                             'precision (bf16: CPUs with AVX-512 BF16 or AMX; onnxruntime runs f32 only)')
    add_compile_arguments(parser, 'also time each torch row compiled by torch.compile (Inductor): the backbone '
                          'and neck, weights frozen for infer')
    parser.add_argument('--upstream-repo', metavar='PATH', help="with --backbone rest-ARCH: also run the "
                        "authors' ResT from this clone of github.com/wofmanaf/ResT, same weights")
    args = parser.parse_args(argv)
    args.weights = None  # set by main with --upstream-repo
    check_args(args)
    args.config_backbone = backbone_graphs(args)  # --onnx files of the config's backbone: torch times that
    return args


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    check_onnx_inputs(args)
    model = f"{args.config}'s backbone" if args.config_backbone else args.config or args.backbone
    print(f'# {model}: batch {args.batch}, input {args.shape[0]}x{args.shape[1]}, {args.device}, '
          f'amp {" ".join(args.amp)}, threads {args.threads or torch.get_num_threads()}, '
          f'{args.warmup} warm-up + {args.repeats} timed iterations, torch {torch.__version__}'
          + (f', --compile-options {format_compile_options(args.inductor_options)}' if args.inductor_options else ''))
    print(f'# CPU {cpu_features().summary()}')
    if args.onnx:
        versions = ', '.join(f'{runtime} {importlib.import_module(runtime).__version__}' for runtime in args.runtime)
        print(f'# tensor mode in torch and {", ".join(args.onnx)} in {versions}')
        for path in args.onnx:
            print(f'# {path}: {graph_batches(path, args.batch, tuple(args.shape))}')
    with tempfile.TemporaryDirectory() as directory:
        if args.upstream_repo:
            args.weights = save_upstream_weights(args, directory)
            print(f"# the authors' ResT from {args.upstream_repo}, same weights (ours loaded them through "
                  'its checkpoint loader)')
        results = {mode: time_contenders(args, mode) for mode in args.mode}
    print(format_table(args, results))
    sys.stdout.flush()


if __name__ == '__main__':
    run_main(main)

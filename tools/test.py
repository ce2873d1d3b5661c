"""Test (and evaluate) a detector or a segmentor with an mmrmt backbone (the config's ``default_scope`` decides):
COCO bbox/segm mAP (CocoMetric) for detection, mIoU (IoUMetric) for segmentation.

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE_OR_DIR]
                         [--force] [--show-dir DIR] [--tta] [--amp [bf32]] [--allow-partial-load]
                         [--compile [--compile-options KEY=VALUE ...]]
                         [--cfg-options KEY=VALUE ...] [--launcher pytorch]

Each bad input (the config, its data paths, outputs that cannot be written or are inputs, a checkpoint that does
not hold exactly the model's weights) ends the tool with one line before the run; ``--out``, ``--show-dir``,
``--tta`` and ``--amp``: docs/get_started.md. ``--amp bf32`` (CPU): float32 tensors whose oneDNN GEMMs and
convolutions multiply in bf16 (:mod:`mmrmt.amp.bf32`). ``--compile``: the backbone and neck compiled by
torch.compile (Inductor) for inference, weights frozen, the code cached for the next run; the log's last line
says the compile time (:mod:`mmrmt.utils.compiled_inference`). The config's ``compile`` setting is mmengine's,
for training: tools/test.py leaves it alone.
"""
import argparse
import os.path as osp
from contextlib import nullcontext

import torch
from mmengine.config import Config, ConfigDict
from mmengine.runner.checkpoint import load_state_dict

from mmrmt.amp.bf32 import bf32_gemms
from mmrmt.engine import work_dir_claim
from mmrmt.utils import (PreflightError, build_cpu_model, build_runner, check_data_paths, check_not_an_input,
                         check_run_checkpoint, check_writable, dataloader_inputs, load_run_config, model_specs,
                         parse_launch_args, run_main, run_phase)
from mmrmt.utils.amp import add_amp_argument, check_amp
from mmrmt.utils.compiled_inference import add_compile_arguments, check_compile, compile_features
from mmrmt.utils.model_kind import config_scope
from mmrmt.utils.output_guard import leaf_datasets
from mmrmt.utils.prediction_out import (add_prediction_dump, add_prediction_out_arguments, check_prediction_out,
                                        prediction_out_claimed)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test (and evaluate) a detector or a segmentor')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--work-dir', help='the dir to save logs and metrics')
    add_prediction_out_arguments(parser)
    parser.add_argument('--show', action='store_true', help='show the predictions in a window')
    parser.add_argument('--show-dir', help='folder receiving images painted with the predictions')
    parser.add_argument('--wait-time', type=float, default=2, help='seconds each shown image stays')
    parser.add_argument('--tta', action='store_true',
                        help="test-time augmentation: the config's tta_pipeline views (scales, "
                        'flips) merged by its tta_model')
    add_amp_argument(parser)
    add_compile_arguments(parser)
    return parse_launch_args(parser)


def enable_visualization(cfg: Config, args: argparse.Namespace) -> None:
    """Make the config's VisualizationHook draw every test image."""
    hook = cfg.default_hooks.get('visualization')
    if hook is None:
        raise PreflightError('--show/--show-dir need default_hooks.visualization in the config')
    hook.draw = True
    if args.show:
        hook.show, hook.wait_time = True, args.wait_time
    if args.show_dir and config_scope(cfg) == 'mmdet':
        hook.test_out_dir = osp.abspath(args.show_dir)
    elif args.show_dir:
        hook.interval = 1
        cfg.visualizer.save_dir = args.show_dir


def use_test_time_aug(cfg: Config) -> None:
    """``--tta``, as mmdet's and mmseg's: wrap ``cfg.model`` in ``cfg.tta_model``, test on ``cfg.tta_pipeline``."""
    missing = [key for key in ('tta_model', 'tta_pipeline') if not cfg.get(key)]
    if missing:
        raise PreflightError(f'--tta needs {" and ".join(missing)} in the config (as in '
                             f'configs/_base_/datasets/coco_tta.py or mmseg\'s ade20k.py)')
    cfg.model = ConfigDict(**cfg.tta_model, module=cfg.model)
    for dataset in leaf_datasets(cfg.test_dataloader.dataset):
        dataset.pipeline = cfg.tta_pipeline


def main() -> None:
    args = parse_args()
    device_type = 'cuda' if torch.cuda.is_available() else 'cpu'
    compile_options = check_compile(args.compile, args.compile_options, device_type)
    check_amp(args.amp, device_type, args.compile)
    cfg = load_run_config(args.config, args.cfg_options, args.launcher, args.work_dir)
    if args.tta:
        use_test_time_aug(cfg)
    if args.amp == 'autocast':  # mmengine's test loop autocasts; the hook keeps mmcv's float32-only CPU kernels float32
        cfg.test_cfg.fp16 = True
        cfg.custom_hooks = [*(cfg.get('custom_hooks') or []), dict(type='Float32CPUKernelsHook')]
    inputs = [('the checkpoint', args.checkpoint), ('the config', args.config),
              *dataloader_inputs(cfg, ['test_dataloader'])]
    check_writable(cfg.work_dir, '--work-dir', is_dir=True)
    check_not_an_input(cfg.work_dir, '--work-dir', inputs)
    work_dir_claim(cfg.work_dir).check_free()  # a busy work dir before the other checks read its files
    check_prediction_out(cfg, args.out, args.force, inputs)
    if args.show_dir:
        check_writable(args.show_dir, '--show-dir', is_dir=True)
        check_not_an_input(args.show_dir, '--show-dir', inputs)
    model = build_cpu_model(cfg)  # the one build, and the checkpoint's one read
    weights = check_run_checkpoint(cfg, model_specs(model), args.checkpoint, 'checkpoint',
                                   allow_partial=args.allow_partial_load)
    check_data_paths(cfg, ['test_dataloader', 'test_evaluator'])
    if args.show or args.show_dir:
        enable_visualization(cfg, args)
    cfg.load_from = args.checkpoint
    if weights is not None:  # mmengine's load: a partial load logs what it leaves out
        load_state_dict(model, weights, logger='current')
    with prediction_out_claimed(cfg, args.out):
        runner = build_runner(cfg, model if weights is not None else None)  # None: a path the runner reads
        compiled = compile_features(runner.model, compile_options) if compile_options is not None else None
        add_prediction_dump(runner, cfg, args.out, args.force)
        with bf32_gemms() if args.amp == 'bf32' else nullcontext():
            run_phase(runner, 'test')
    if compiled is not None:
        runner.logger.info(compiled.summary())


if __name__ == '__main__':
    run_main(main)

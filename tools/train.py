"""Train a detector or a segmentor with an mmrmt backbone.

One tool for MMDetection and MMSegmentation configs: the config's
``default_scope`` ('mmdet' or 'mmseg') decides which library's registries
build the run. Without CUDA it trains on the CPU, and distributed runs
(``--launcher pytorch``, see tools/dist_train.sh) use the gloo backend.

    python tools/train.py CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp] [--auto-scale-lr]
                          [--cfg-options KEY=VALUE ...] [--launcher pytorch]
"""
import argparse
import sys
import warnings

import torch

from mmrmt.engine import ResumeRNGHook
from mmrmt.utils import (PreflightError, build_runner, check_checkpoint_file,
                         check_dataloader_paths, check_evaluator_files, load_run_config,
                         parse_launch_args, run_phase)
from mmrmt.utils.auto_scale_lr import enable_auto_scale_lr

# mmengine's imports trigger setuptools' pkg_resources deprecation notice
warnings.filterwarnings('ignore', message='pkg_resources is deprecated')


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Train a detector or a segmentor')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--resume', nargs='?', type=str, const='auto',
        help='resume from this checkpoint, or, without a path, from the latest '
        'checkpoint in the work dir')
    parser.add_argument(
        '--amp', action='store_true',
        help='automatic mixed precision (float16 with dynamic loss scaling; needs CUDA)')
    parser.add_argument(
        '--auto-scale-lr', action='store_true',
        help='scale the learning rate by the batch size of the run over the '
        "config's auto_scale_lr.base_batch_size")
    return parse_launch_args(parser)


def main() -> None:
    args = parse_args()
    try:
        cfg = load_run_config(args.config, args.cfg_options, args.launcher, args.work_dir)
        if args.amp:
            if not torch.cuda.is_available():
                raise PreflightError('--amp needs a CUDA device; train without --amp on the CPU')
            cfg.optim_wrapper.type = 'AmpOptimWrapper'
            cfg.optim_wrapper.loss_scale = 'dynamic'
        if args.auto_scale_lr:
            enable_auto_scale_lr(cfg)
        if args.resume == 'auto':
            cfg.resume, cfg.load_from = True, None
        elif args.resume is not None:
            check_checkpoint_file(args.resume, '--resume checkpoint')
            cfg.resume, cfg.load_from = True, args.resume
        else:
            check_checkpoint_file(cfg.get('load_from'), 'load_from checkpoint')
        loaders, evaluators = ['train_dataloader'], []
        if cfg.get('val_cfg'):  # a run without validation needs no validation data
            loaders.append('val_dataloader')
            evaluators.append('val_evaluator')
        check_dataloader_paths(cfg, loaders)
        check_evaluator_files(cfg, evaluators)
    except PreflightError as error:
        sys.exit(f'error: {error}')
    runner = build_runner(cfg)
    runner.register_hook(ResumeRNGHook())
    run_phase(runner, 'train')


if __name__ == '__main__':
    main()

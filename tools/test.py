"""Test (and evaluate) a detector or a segmentor with an mmrmt backbone.

One tool for MMDetection and MMSegmentation configs; the config's
``default_scope`` decides. It prints the config's test metrics: COCO
bbox/segm mAP (CocoMetric) for detection, mIoU (IoUMetric) for segmentation.

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE_OR_DIR]
                         [--show-dir DIR] [--tta] [--cfg-options KEY=VALUE ...]
                         [--launcher pytorch]

``--out``: detection dumps the predictions to a .pkl file (mmdet's
DumpDetResults); segmentation writes the predicted label maps as PNGs into
the folder (mmseg's IoUMetric ``output_dir``).
``--show-dir``: detection writes one painted image per test image into the
folder; segmentation writes them to ``DIR/vis_data/vis_image/`` (mmseg's layout).
"""
import argparse
import os.path as osp
import sys
import warnings

from mmengine.config import Config

from mmrmt.utils import (PreflightError, build_runner, check_checkpoint_file,
                         check_dataloader_paths, check_evaluator_files, load_run_config,
                         parse_launch_args, run_phase)
from mmrmt.utils.test_time_aug import use_test_time_aug

# mmengine's imports trigger setuptools' pkg_resources deprecation notice
warnings.filterwarnings('ignore', message='pkg_resources is deprecated')


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test (and evaluate) a detector or a segmentor')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--work-dir', help='the dir to save logs and metrics')
    parser.add_argument(
        '--out', help='detection: .pkl file receiving the predictions; segmentation: folder '
        'receiving the predicted label maps')
    parser.add_argument('--show', action='store_true', help='show the predictions in a window')
    parser.add_argument('--show-dir', help='folder receiving images painted with the predictions')
    parser.add_argument('--wait-time', type=float, default=2, help='seconds each shown image stays')
    parser.add_argument('--tta', action='store_true',
                        help="test-time augmentation: the config's tta_pipeline views (scales, "
                        'flips) merged by its tta_model')
    return parse_launch_args(parser)


def is_detection(cfg: Config) -> bool:
    return cfg.get('default_scope') == 'mmdet'


def enable_visualization(cfg: Config, args: argparse.Namespace) -> None:
    """Make the config's VisualizationHook draw every test image."""
    hook = cfg.default_hooks.get('visualization')
    if hook is None:
        raise PreflightError('--show/--show-dir need default_hooks.visualization in the config')
    hook.draw = True
    if args.show:
        hook.show, hook.wait_time = True, args.wait_time
    if args.show_dir and is_detection(cfg):
        hook.test_out_dir = osp.abspath(args.show_dir)
    elif args.show_dir:
        hook.interval = 1
        cfg.visualizer.save_dir = args.show_dir


def main() -> None:
    args = parse_args()
    try:
        cfg = load_run_config(args.config, args.cfg_options, args.launcher, args.work_dir)
        check_checkpoint_file(args.checkpoint, 'checkpoint')
        check_dataloader_paths(cfg, ['test_dataloader'])
        check_evaluator_files(cfg, ['test_evaluator'])
        if args.show or args.show_dir:
            enable_visualization(cfg, args)
        if args.tta:
            use_test_time_aug(cfg)
        if args.out and is_detection(cfg) and not args.out.endswith(('.pkl', '.pickle')):
            raise PreflightError(f'--out must name a .pkl file for detection, got {args.out}')
    except PreflightError as error:
        sys.exit(f'error: {error}')
    cfg.load_from = args.checkpoint
    if args.out and not is_detection(cfg):
        cfg.test_evaluator.output_dir = args.out
        cfg.test_evaluator.keep_results = True
    runner = build_runner(cfg)
    if args.out and is_detection(cfg):
        from mmdet.evaluation import DumpDetResults
        runner.test_evaluator.metrics.append(DumpDetResults(out_file_path=args.out))
    run_phase(runner, 'test')


if __name__ == '__main__':
    main()

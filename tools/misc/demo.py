"""The CPU demo behind ``make demo``: data, training, COCO evaluation, a picture.

1. generates the synthetic demo data (data/demo, seconds, once);
2. trains RMT-T Mask R-CNN (configs/demo/mask-rcnn_rmt-t_fpn_demo.py) from
   scratch, showing a progress line;
3. evaluates it on the validation split with the COCO metric (bbox, segm);
4. paints its predictions (masks, boxes, labels) on a validation picture with
   the image demo's code (mmrmt.apis, as demo/image_demo.py) and prints where
   the picture and the predictions' JSON file are.

    python tools/misc/demo.py [--work-dir work_dirs/demo] [--score-thr 0.5]
                              [--threads 1] [--amp] [--cfg-options KEY=VALUE ...]

``--amp`` trains as ``tools/train.py --amp`` does (bf16 autocast on a CPU with native bf16);
the evaluation and the picture stay float32.
"""
import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

import torch
from mmengine.hooks import Hook
from mmengine.runner import find_latest_checkpoint

from mmrmt.apis import build_inferencer, output_files, predict_images
from mmrmt.datasets import make_demo_data
from mmrmt.utils import add_cfg_options, build_runner, load_run_config, run_main, run_phase
from mmrmt.utils.amp import use_amp_optim_wrapper

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / 'configs' / 'demo' / 'mask-rcnn_rmt-t_fpn_demo.py'
DATA_ROOT = REPO / 'data' / 'demo'
PICTURE_SCALE = 4  # the 128 px pictures are painted at 512 px to keep labels legible


class ProgressHook(Hook):
    """Print one progress line: iteration, loss, elapsed and remaining time.

    Args:
        every (int): Iterations between lines when stdout is not a terminal
            (a terminal gets one line updated in place).
    """

    priority = 'LOW'

    def __init__(self, every: int = 10) -> None:
        self.every = every
        self.start = 0.0
        self.interactive = sys.stdout.isatty()

    def before_train(self, runner) -> None:
        self.start = time.monotonic()

    def after_train_iter(self, runner, batch_idx: int, data_batch=None, outputs=None) -> None:
        done, total = runner.iter + 1, runner.max_iters
        if not (self.interactive or done % self.every == 0 or done == total):
            return
        elapsed = time.monotonic() - self.start
        remaining = elapsed / done * (total - done)
        filled = int(30 * done / total)
        loss = float(outputs['loss'].detach()) if outputs and 'loss' in outputs else float('nan')
        line = (f'train {done:4d}/{total} [{"=" * filled}{"." * (30 - filled)}] '
                f'loss {loss:6.3f}  elapsed {format_seconds(elapsed)}  '
                f'left {format_seconds(remaining)}')
        end = '\n' if not self.interactive or done == total else ''
        print(('\r' if self.interactive else '') + line, end=end, flush=True)


def format_seconds(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f'{minutes}:{secs:02d}'


def busiest_val_image(ann_file: Path) -> str:
    """The first validation image showing every class (else the most objects)."""
    data = json.loads(ann_file.read_text())
    classes = {image['id']: set() for image in data['images']}
    counts = {image['id']: 0 for image in data['images']}
    for annotation in data['annotations']:
        classes[annotation['image_id']].add(annotation['category_id'])
        counts[annotation['image_id']] += 1
    best = max(data['images'], key=lambda image: (len(classes[image['id']]), counts[image['id']]))
    return best['file_name']


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work-dir', default=str(REPO / 'work_dirs' / 'demo'),
                        help='folder for logs, the checkpoint and the picture')
    parser.add_argument('--score-thr', type=float, default=0.5,
                        help='lowest score of a painted detection')
    parser.add_argument('--threads', type=int, default=1,
                        help='compute threads; one keeps a shared 2-core machine responsive, '
                        'more help on an idle machine with more cores')
    parser.add_argument('--amp', action='store_true',
                        help='train in mixed precision, as tools/train.py --amp (bf16 on a CPU with '
                        'AVX-512 BF16 or AMX)')
    add_cfg_options(parser, example='train_cfg.max_iters=50')
    return parser.parse_args()


def main(args: Optional[argparse.Namespace] = None) -> None:
    args = args or parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress shows up at once, even piped
    torch.set_num_threads(args.threads)
    cfg = load_run_config(str(CONFIG), args.cfg_options, work_dir=args.work_dir)
    if args.amp:
        use_amp_optim_wrapper(cfg)
    print(f'[demo] demo data: {DATA_ROOT}')
    make_demo_data(str(DATA_ROOT))

    cfg.log_level = 'WARNING'  # the progress line replaces mmengine's log (kept in work_dir)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None  # evaluated once, below
    cfg.default_hooks.checkpoint.interval = cfg.train_cfg.max_iters
    print(f'[demo] training RMT-T Mask R-CNN from scratch for {cfg.train_cfg.max_iters} '
          f'iterations on the CPU (compute threads: {torch.get_num_threads()}); log in '
          f'{args.work_dir}')
    runner = build_runner(cfg)
    runner.register_hook(ProgressHook())
    start = time.monotonic()
    run_phase(runner, 'train')
    train_seconds = time.monotonic() - start

    print('[demo] COCO evaluation on the validation split')
    start = time.monotonic()
    metrics = runner.test()
    test_seconds = time.monotonic() - start

    picture = DATA_ROOT / 'coco' / 'val' / busiest_val_image(
        DATA_ROOT / 'coco' / 'annotations' / 'instances_val.json')
    outputs = output_files([picture], Path(args.work_dir), force=True)  # the demo's own folder
    inferencer = build_inferencer(cfg, find_latest_checkpoint(args.work_dir), device='cpu')
    count = predict_images(inferencer, outputs, args.score_thr, picture_scale=PICTURE_SCALE)[picture]
    print(f'[demo] training took {format_seconds(train_seconds)}, evaluation '
          f'{format_seconds(test_seconds)}')
    print(f'[demo] bbox mAP {metrics["coco/bbox_mAP"]:.3f}   bbox mAP@0.5 '
          f'{metrics["coco/bbox_mAP_50"]:.3f}   segm mAP {metrics["coco/segm_mAP"]:.3f}   '
          f'segm mAP@0.5 {metrics["coco/segm_mAP_50"]:.3f}')
    print(f'[demo] {count} detections (score >= {args.score_thr}) on {picture.name}: '
          f'{outputs[picture].picture} (all detections: {outputs[picture].predictions})')


if __name__ == '__main__':
    run_main(main)

"""Train a detector or a segmentor with an mmrmt backbone (the config's ``default_scope``, 'mmdet' or 'mmseg',
decides which library builds the run); on the CPU without CUDA, gloo when distributed (tools/dist_train.sh).

    python tools/train.py CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp] [--auto-scale-lr]
                          [--allow-partial-load] [--cfg-options KEY=VALUE ...]
                          [--launcher pytorch]

Each bad input (the config, its data paths, the work dir, an earlier run there, the checkpoint to start from,
``--amp`` on a CPU without native bf16) ends the tool with one line before anything is written. The options,
the checks and their messages: docs/get_started.md, docs/troubleshooting.md.
"""
import argparse
import logging
from typing import Any, Optional, Tuple

from mmengine.config import Config
from mmengine.logging import print_log

from mmrmt.engine import work_dir_claim
from mmrmt.engine.own_checkpoint import (ForeignCheckpointError, checkpoint_out_dir, earlier_run_problem,
                                         own_last_checkpoint)
from mmrmt.utils import (PreflightError, build_runner, check_data_paths, check_not_an_input, check_run_checkpoint,
                         check_writable, config_model_specs, dataloader_inputs, load_run_config, parse_launch_args,
                         read_run_checkpoint, run_main, run_phase)
from mmrmt.utils.amp import use_amp_optim_wrapper


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
        help="automatic mixed precision: on CUDA float16 with the config's amp_loss_scale (a number "
        "for a static loss scale, 'dynamic' (the default) for dynamic loss scaling); on a CPU with "
        'native bf16 (AVX-512 BF16 or AMX) bf16 autocast, unscaled')
    parser.add_argument(
        '--auto-scale-lr', action='store_true',
        help='scale the learning rate by the batch size of the run over the '
        "config's auto_scale_lr.base_batch_size")
    return parse_launch_args(parser)


def check_optim_wrapper_device(cfg: Config) -> None:
    """Fail unless this machine runs the config's optim wrapper: mmengine's ``AmpOptimWrapper`` (and its
    subclasses) asserts a CUDA, NPU, MLU or MUSA device only when the runner builds it, after the work dir."""
    from mmengine.device import is_cuda_available, is_mlu_available, is_musa_available, is_npu_available
    from mmengine.optim import AmpOptimWrapper
    from mmengine.registry import OPTIM_WRAPPERS
    kind = (cfg.get('optim_wrapper') or {}).get('type')
    wrapper = OPTIM_WRAPPERS.get(kind) if isinstance(kind, str) else kind
    if not (isinstance(wrapper, type) and issubclass(wrapper, AmpOptimWrapper)) or any(
            available() for available in (is_cuda_available, is_npu_available, is_mlu_available, is_musa_available)):
        return
    raise PreflightError(f"optim_wrapper.type={wrapper.__name__} trains on a CUDA, NPU, MLU or MUSA device only "
                         "(mmengine's float16 with loss scaling), and this machine has none: on the CPU train "
                         'with --amp (bf16 autocast, where the CPU has native bf16) or with optim_wrapper.type='
                         'OptimWrapper')


def check_pretrained_checkpoints(node: Any, where: str = 'model') -> None:
    """Read now each ``init_cfg=dict(type='Pretrained', checkpoint=...)`` file inside the model config ``node``
    (the run reads them at training, after making its work dir)."""
    if isinstance(node, dict) and node.get('type') == 'Pretrained' and isinstance(node.get('checkpoint'), str):
        read_run_checkpoint(node['checkpoint'], f'{where}.checkpoint')
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, (list, tuple)) else ()
    for key, value in children:
        check_pretrained_checkpoints(value, f'{where}.{key}' if isinstance(node, dict) else f'{where}[{key}]')


def set_start_checkpoint(cfg: Config, resume: Optional[str]) -> Optional[Tuple[str, str]]:
    """Point ``cfg`` at the checkpoint the run starts from (``--resume``, without a path the work dir's last
    one: :func:`~mmrmt.engine.own_checkpoint.own_last_checkpoint`, or ``load_from``).

    Returns:
        tuple, optional: The checkpoint and its role in messages, or None
        when training starts from scratch.

    Raises:
        PreflightError: ``--resume`` without a path and no ``last_checkpoint`` in the work dir (the run would
            silently start from scratch), or it names another folder's checkpoint, absent from the run's own.
    """
    if resume is None and cfg.get('resume'):  # asked for by the config itself
        resume = cfg.get('load_from') or 'auto'
    if resume == 'auto':
        try:
            resume, moved = own_last_checkpoint(cfg.work_dir, checkpoint_out_dir(cfg))
        except ForeignCheckpointError as error:
            raise PreflightError(str(error)) from error
        if resume is None:
            raise PreflightError(f'--resume found no checkpoint to resume from in {cfg.work_dir} (no '
                                 'last_checkpoint file); name one with --resume CKPT, or train from scratch without '
                                 '--resume')
        if moved:
            print_log(moved, logger='current', level=logging.WARNING)
    if resume is not None:
        cfg.resume, cfg.load_from = True, resume
        return resume, '--resume'
    if cfg.get('load_from'):
        return cfg.load_from, 'load_from'
    return None


def enable_auto_scale_lr(cfg: Config) -> None:
    """``--auto-scale-lr``, mmdet's: mmengine scales the learning rates by the batch size over the config's base one."""
    if not (cfg.get('auto_scale_lr') or {}).get('base_batch_size'):
        raise PreflightError('--auto-scale-lr needs auto_scale_lr = dict(base_batch_size=N) in the '
                             'config: N, the total batch size its learning rate was set for')
    cfg.auto_scale_lr.enable = True


def main() -> None:
    args = parse_args()
    cfg = load_run_config(args.config, args.cfg_options, args.launcher, args.work_dir)
    work_dir_claim(cfg.work_dir).check_free()  # a busy work dir before the other checks read its files
    if args.amp:
        use_amp_optim_wrapper(cfg)
    check_optim_wrapper_device(cfg)
    if args.auto_scale_lr:
        enable_auto_scale_lr(cfg)
    check_writable(cfg.work_dir, '--work-dir', is_dir=True)
    check_not_an_input(cfg.work_dir, '--work-dir', [('the config', args.config),
                                                    *dataloader_inputs(cfg, ['train_dataloader', 'val_dataloader'])])
    model_specs = config_model_specs(cfg)
    check_pretrained_checkpoints(cfg.model)
    start = set_start_checkpoint(cfg, args.resume)
    earlier_run = None if cfg.get('resume') else earlier_run_problem(cfg.work_dir, checkpoint_out_dir(cfg))
    if earlier_run is not None:
        raise PreflightError(earlier_run)
    if start is not None:
        check_run_checkpoint(cfg, model_specs, *start, resume=bool(cfg.get('resume')),
                             allow_partial=args.allow_partial_load)
    validation = ['val_dataloader', 'val_evaluator'] if cfg.get('val_cfg') else []  # a run without it needs no data
    check_data_paths(cfg, ['train_dataloader', *validation])
    run_phase(build_runner(cfg), 'train')


if __name__ == '__main__':
    run_main(main)

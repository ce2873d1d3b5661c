"""The config handling tools/train.py and tools/test.py share.

Parses the options both tools take, loads a config with its command-line
overrides, then adapts it to the machine: the work dir default, the launcher, BN instead of SyncBN when the
run is not distributed on CUDA, and, for distributed runs without CUDA, the
gloo backend and a CPU DistributedDataParallel. mmengine's own process-group
setup assumes a GPU per process, so :func:`build_runner` starts gloo itself.
"""
import argparse
import os
import os.path as osp
from typing import Any, Optional, Sequence

import torch
import torch.distributed as dist
from mmengine.config import Config
from mmengine.registry import RUNNERS
from mmengine.runner import Runner

from mmrmt.engine import OwnWorkDirRunner
from .cfg_options import add_cfg_options, apply_cfg_options
from .config_file import read_config
from .preflight import PreflightError
from .sync_bn import revert_sync_bn_when_single


def load_run_config(config: str,
                    cfg_options: Optional[Sequence[str]] = None,
                    launcher: str = 'none',
                    work_dir: Optional[str] = None) -> Config:
    """Load ``config`` and prepare it for a run on this machine.

    Args:
        config (str): Config file path.
        cfg_options (Sequence[str], optional): ``--cfg-options`` overrides,
            ``KEY=VALUE`` strings (checked, see :func:`apply_cfg_options`).
        launcher (str): 'none', 'pytorch', 'slurm' or 'mpi'.
        work_dir (str, optional): Overrides the config's ``work_dir``;
            without either, ``./work_dirs/<config name>``.

    Returns:
        Config: The prepared config.

    Raises:
        PreflightError: If the config file does not exist or cannot be
            loaded, an override is wrong, or a CPU run asks for a launcher
            other than 'pytorch'.
    """
    cfg = apply_cfg_options(read_config(config), cfg_options)
    cfg.launcher = launcher
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        cfg.work_dir = osp.join('./work_dirs', osp.splitext(osp.basename(config))[0])
    if launcher != 'none' and not torch.cuda.is_available():
        use_cpu_processes(cfg)
    revert_sync_bn_when_single(cfg)
    return cfg


def use_cpu_processes(cfg: Config) -> None:
    """Set gloo and a device-less DistributedDataParallel for a CPU run."""
    if cfg.launcher != 'pytorch':
        raise PreflightError(f'without CUDA only --launcher pytorch is supported, got '
                             f'--launcher {cfg.launcher}')
    cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})['backend'] = 'gloo'
    if cfg.get('model_wrapper_cfg') is None:
        cfg.model_wrapper_cfg = dict(
            type='MMDistributedDataParallel', device_ids=None, broadcast_buffers=False,
            find_unused_parameters=cfg.get('find_unused_parameters', False))


def build_runner(cfg: Config) -> Runner:
    """The config's ``runner_type``, by default :class:`~mmrmt.engine.OwnWorkDirRunner` (one run a
    work dir, its own ``ResumeRNGHook``; mmrmt's configs name it in ``configs/_base_/mmrmt_runtime.py``).

    A distributed run without CUDA joins its gloo process group here (from
    torchrun's environment variables) before the runner is built.
    """
    if (cfg.get('launcher') == 'pytorch' and not torch.cuda.is_available()
            and not dist.is_initialized()):
        dist.init_process_group(backend=cfg.env_cfg.dist_cfg.backend)
    if 'runner_type' not in cfg:
        cfg.runner_type = OwnWorkDirRunner.__name__
    return RUNNERS.build(cfg)


def parse_launch_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Add the options train.py and test.py share, parse, and export ``LOCAL_RANK``.

    The shared options: ``--cfg-options``, ``--allow-partial-load``,
    ``--launcher`` and ``--local_rank`` (for launchers that pass it instead
    of setting ``LOCAL_RANK``).
    """
    add_cfg_options(parser)
    parser.add_argument(
        '--allow-partial-load', action='store_true',
        help='load a checkpoint that does not hold exactly the model\'s weights (only the '
        'matching ones are loaded); without it such a checkpoint is refused before the run')
    parser.add_argument(
        '--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'], default='none',
        help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault('LOCAL_RANK', str(args.local_rank))
    return args


def run_phase(runner: Runner, phase: str) -> Any:
    """``runner.train()`` or ``runner.test()`` ('train' / 'test'), start to finish.

    Afterwards the process leaves its distributed group, if any, once every
    process is done: left open, gloo's threads are still running at
    interpreter exit and a process of a finished run can abort ('terminate
    called without an active exception').
    """
    result = getattr(runner, phase)()
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return result

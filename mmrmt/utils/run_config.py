"""What tools/train.py and tools/test.py share: their common options, the config loaded with its overrides and
adapted to the machine (the work dir default, BN for SyncBN unless distributed on CUDA, gloo and a CPU
DistributedDataParallel for a distributed CPU run), the runner."""
import argparse
import copy
import inspect
import os
import os.path as osp
from typing import Any, Optional, Sequence

import torch
import torch.distributed as dist
from mmengine.config import Config
from mmengine.registry import RUNNERS
from mmengine.runner import Runner
from torch import nn

from mmrmt.engine import OwnWorkDirRunner
from .cfg_options import add_cfg_options, apply_cfg_options
from .config_file import read_config
from .preflight import PreflightError


def replace_sync_bn_types(node: Any) -> None:
    """Set ``type='BN'`` on every SyncBN norm config inside ``node`` (in place): torch's ``SyncBatchNorm``
    refuses CPU tensors, and a single process has nothing to synchronise with."""
    if isinstance(node, dict):
        if node.get('type') in ('SyncBN', 'MMSyncBN'):
            node['type'] = 'BN'
        node = list(node.values())
    for value in node if isinstance(node, (list, tuple)) else ():
        replace_sync_bn_types(value)


def load_run_config(config: str,
                    cfg_options: Optional[Sequence[str]] = None,
                    launcher: str = 'none',
                    work_dir: Optional[str] = None) -> Config:
    """Load ``config`` with its ``--cfg-options`` (checked) and prepare it for a run on this machine: ``launcher``
    ('none', 'pytorch', 'slurm' or 'mpi'; only 'pytorch' without CUDA), ``work_dir`` (else the config's, else
    ``./work_dirs/<config name>``), SyncBN replaced by BN unless distributed on CUDA; a :class:`PreflightError`
    for a bad config, override or launcher."""
    cfg = apply_cfg_options(read_config(config), cfg_options)
    cfg.launcher = launcher
    if work_dir is not None or cfg.get('work_dir') is None:
        cfg.work_dir = work_dir or osp.join('./work_dirs', osp.splitext(osp.basename(config))[0])
    if launcher != 'none' and not torch.cuda.is_available():
        if launcher != 'pytorch':
            raise PreflightError(f'without CUDA only --launcher pytorch is supported, got --launcher {launcher}')
        cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})['backend'] = 'gloo'
        if cfg.get('model_wrapper_cfg') is None:
            cfg.model_wrapper_cfg = dict(
                type='MMDistributedDataParallel', device_ids=None, broadcast_buffers=False,
                find_unused_parameters=cfg.get('find_unused_parameters', False))
    if launcher == 'none' or not torch.cuda.is_available():  # SyncBN synchronises processes on CUDA devices
        replace_sync_bn_types(cfg.get('model'))
    return cfg


def build_runner(cfg: Config, model: Optional[nn.Module] = None) -> Runner:
    """The config's ``runner_type`` (by default :class:`~mmrmt.engine.OwnWorkDirRunner`), after joining the
    gloo process group of a distributed CPU run (mmengine's setup assumes a GPU per process).

    Args:
        cfg (Config): The run's config.
        model (nn.Module, optional): ``cfg.model`` built already, its weights loaded: the runner takes it
            instead of building another and loads no checkpoint (``load_from`` stays in the config it logs).

    Returns:
        Runner: Built as ``Runner.from_cfg`` builds it.
    """
    if cfg.get('launcher') == 'pytorch' and not torch.cuda.is_available() and not dist.is_initialized():
        dist.init_process_group(backend=cfg.env_cfg.dist_cfg.backend)
    cfg.setdefault('runner_type', OwnWorkDirRunner.__name__)
    if model is None:
        return RUNNERS.build(cfg)
    arguments = {name: copy.deepcopy(cfg[name]) for name in inspect.signature(Runner.__init__).parameters
                 if name in cfg}  # Runner.from_cfg's arguments
    return RUNNERS.get(cfg.runner_type)(**dict(arguments, model=model, load_from=None, resume=False, cfg=cfg))


def parse_launch_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Add the options train.py and test.py share (``--cfg-options``, ``--allow-partial-load``,
    ``--launcher``, ``--local_rank``), parse, and export ``LOCAL_RANK``."""
    add_cfg_options(parser)
    parser.add_argument(
        '--allow-partial-load', action='store_true',
        help='load a checkpoint that does not hold exactly the model\'s weights (only the '
        'matching ones are loaded); without it such a checkpoint is refused before the run')
    parser.add_argument('--launcher', choices=['none', 'pytorch', 'slurm', 'mpi'], default='none', help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault('LOCAL_RANK', str(args.local_rank))
    return args


def run_phase(runner: Runner, phase: str) -> Any:
    """``runner.train()`` or ``runner.test()``, then leave the distributed group, if any, once every process
    is done (gloo's threads left running at exit can abort a finished run's process)."""
    result = getattr(runner, phase)()
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return result

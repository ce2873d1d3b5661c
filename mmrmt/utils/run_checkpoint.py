"""The checkpoint a run loads, checked before the run starts.

``tools/test.py CONFIG CHECKPOINT``, ``load_from`` and ``--resume`` hand a
file to mmengine, which reads it only once the runner is built and then loads
whatever keys happen to match, logging a warning: a checkpoint of another
model evaluates random weights and exits 0. Here the file is read first
(empty, truncated or foreign files fail with one line), a ``--resume`` file
must be a training checkpoint, and the model the config describes must find
each of its weights in the file, with the same shape and kind of number,
and nothing more (``--allow-partial-load`` skips that last check for
deliberate partial loads); weights the runner will cast to the model's dtype
(a float16 file) are said in the log.
"""
import logging
import os.path as osp
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.model import BaseTTAModel

from mmrmt.checkpoint import (TensorSpec, cast_note, extract_state_dict, fit_problems, is_remote, is_url, kind_problem,
                              read_checkpoint, resumed_config, specs)
from mmrmt.engine.own_checkpoint import ForeignCheckpointError, own_last_checkpoint
from .model_from_config import build_cpu_model
from .preflight import PreflightError


def latest_checkpoint(work_dir: str, out_dir: Optional[str] = None) -> str:
    """The checkpoint ``--resume`` without a path continues from: the one
    ``last_checkpoint`` names, in the run's own checkpoint folder (the work
    dir, or ``out_dir/<work dir name>``; see :func:`~mmrmt.engine.own_last_checkpoint`).

    Raises:
        PreflightError: The work dir holds no ``last_checkpoint`` record, so
            the run would silently start from scratch; or the record names
            another folder's checkpoint, absent from the run's own.
    """
    if not osp.isfile(osp.join(work_dir, 'last_checkpoint')):
        raise PreflightError(f'--resume found no checkpoint to resume from in {work_dir} (no '
                             'last_checkpoint file); name one with --resume CKPT, or train from '
                             'scratch without --resume')
    try:
        checkpoint, moved = own_last_checkpoint(work_dir, out_dir)
    except ForeignCheckpointError as error:
        raise PreflightError(str(error)) from error
    if moved:
        print_log(moved, logger='current', level=logging.WARNING)
    return checkpoint


def lacking_resume_keys(checkpoint: dict) -> List[str]:
    """What mmengine's ``Runner.resume`` needs besides the weights and ``checkpoint`` lacks."""
    meta = checkpoint['meta'] if isinstance(checkpoint.get('meta'), dict) else {}
    lacking = [] if 'message_hub' in checkpoint else ['message_hub']
    return lacking + [f'meta.{key}' for key in ('epoch', 'iter') if key not in meta]


def read_run_checkpoint(path: str, role: str, resume: bool = False) -> Optional[Dict[str, TensorSpec]]:
    """Read a checkpoint the run will load and return the shapes and dtypes of its weights.

    Args:
        path (str): Local path or URL (an http(s) one is fetched now; others are
            left to the runner: None).
        role (str): What the file is for, in messages (``'checkpoint'``,
            ``'load_from checkpoint'``, ``'--resume checkpoint'``).
        resume (bool): Whether training resumes from it, so that it must
            also hold the training state.

    Raises:
        PreflightError: The file is missing, empty, truncated, not a
            checkpoint or without weights; or ``resume`` and it is not a
            training checkpoint (e.g. a converted backbone), or its
            ``meta['config']``, which mmengine's resume runs, is not plain data.
    """
    if is_remote(path) and not is_url(path):
        return None
    if not (is_url(path) or osp.isfile(path)):
        raise PreflightError(f'{role} not found: {path}')
    try:
        checkpoint = read_checkpoint(path)
        weights = extract_state_dict(checkpoint, path)
        if resume:
            resumed_config(checkpoint, path)  # mmengine's resume runs this text: refused unless plain data
    except ValueError as error:
        raise PreflightError(f'{role} {error}') from error
    lacking = lacking_resume_keys(checkpoint) if resume else []
    if lacking:
        raise PreflightError(
            f'{role} {path} is not a training checkpoint (it has no {", ".join(lacking)}): '
            'resume from a file tools/train.py wrote, or start from these weights with '
            f'--cfg-options load_from={path}')
    return specs(weights)


def pretrained_checkpoints(node: Any, where: str = 'model') -> Iterator[Tuple[str, str]]:
    """(location, path) of each ``init_cfg=dict(type='Pretrained', checkpoint=...)`` inside a
    model config, e.g. ``('model.backbone.init_cfg', 'checkpoints/rmt-s_in1k.pth')``."""
    if isinstance(node, dict):
        if node.get('type') == 'Pretrained' and isinstance(node.get('checkpoint'), str):
            yield where, node['checkpoint']
        for key, value in node.items():
            yield from pretrained_checkpoints(value, f'{where}.{key}')
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            yield from pretrained_checkpoints(value, f'{where}[{index}]')


def check_pretrained_checkpoints(cfg: Config) -> None:
    """Read each local ``Pretrained`` file of the model before training builds it.

    mmengine initialises the weights (loading these files) at the start of
    every training run, resumed or not.

    Raises:
        PreflightError: See :func:`read_run_checkpoint`.
    """
    for where, path in pretrained_checkpoints(cfg.model):
        read_run_checkpoint(path, f'{where} checkpoint')


def config_model_specs(cfg: Config) -> Dict[str, TensorSpec]:
    """The shapes and dtypes of the weights of the model ``cfg`` describes (built, then dropped).

    A test-time augmentation wrapper (``--tta``) counts as the model it
    wraps, whose weights a checkpoint holds. The build is silent: the run
    builds the model again, with its warnings, in its log.

    Raises:
        PreflightError: The model does not build.
    """
    model = build_cpu_model(cfg, quiet=True)
    if isinstance(model, BaseTTAModel):
        model = model.module
    return specs(model.state_dict())


def check_run_checkpoint(cfg: Config, model_specs: Mapping[str, TensorSpec], path: str, role: str,
                         resume: bool = False, allow_partial: bool = False) -> None:
    """Fail before the run unless ``path`` is readable and holds the whole model.

    Args:
        cfg (Config): The run's config (named in messages).
        model_specs (Mapping[str, TensorSpec]): Its model's weights'
            shapes and dtypes (:func:`config_model_specs`).
        path (str): The checkpoint.
        role (str): See :func:`read_run_checkpoint`.
        resume (bool): See :func:`read_run_checkpoint`.
        allow_partial (bool): Compare with the model only the kinds of number
            (integers for floats) of the tensors both hold.

    Raises:
        PreflightError: See :func:`read_run_checkpoint`; or the file's
            weights miss some of the model's, have other shapes or another
            kind of number (integers for floats), or include weights the
            model does not have, named in the message.
    """
    file_specs = read_run_checkpoint(path, role, resume)
    if file_specs is None:
        return
    if allow_partial:  # the tensors that match in shape load, cast to the model's dtype: integers never
        other_kind = kind_problem(model_specs, file_specs)
        if other_kind:
            raise PreflightError(f'{role} {path} does not fit the model of {cfg.filename} even in part: '
                                 f'{other_kind}. Load a floating-point checkpoint')
        return
    problems = fit_problems(model_specs, file_specs)
    if problems:
        raise PreflightError(f'{role} {path} does not fit the model of {cfg.filename}: '
                             f'{"; ".join(problems)}. Is it a checkpoint of another model? To '
                             'load only the weights that match on purpose (e.g. to fine-tune with '
                             'other classes), add --allow-partial-load')
    note = cast_note(model_specs, file_specs)
    if note:
        print_log(f'{role} {path}: {note}', logger='current')

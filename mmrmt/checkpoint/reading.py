"""Read a checkpoint file safely (weights only) and take its weights out.

A PyTorch file (``.pth``: a zip archive or a legacy pickle) is read with
torch's weights-only unpickler; a safetensors file (named ``.safetensors``,
or recognised by its header) holds tensors and a text header only, so
nothing in it can run. Every problem is a ``ValueError`` (or
``FileNotFoundError``) whose message is one line naming the file.
"""
import json
import os.path as osp
import zipfile
from typing import Dict, Optional

import torch
from safetensors import safe_open

from .reasons import one_line_reason
from .url import copy_dropped_if_refused, fetch_checkpoint, is_url
from .weights_only import load_with_checkpoint_types

#: A network's weights: key -> tensor.
StateDict = Dict[str, torch.Tensor]

#: Wrappers under which training scripts store the weights, in order of preference.
STATE_DICT_WRAPPERS = ('state_dict', 'model', 'model_ema')

SAFETENSORS_SUFFIX = '.safetensors'
#: Where our converters keep a checkpoint's ``meta`` in a safetensors file's
#: header (its metadata holds strings only): as JSON text, read as data.
SAFETENSORS_META_KEY = 'mmrmt_meta'


def is_safetensors_name(path: object) -> bool:
    """Whether ``path`` names a safetensors file: its suffix, in any case (``.safetensors``, ``.SAFETENSORS``)."""
    return str(path).lower().endswith(SAFETENSORS_SUFFIX)


def file_head(filename: str) -> bytes:
    """The first 16 bytes of ``filename``: enough to tell the formats apart."""
    with open(filename, 'rb') as file:
        return file.read(16)


def is_safetensors_head(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a safetensors file: the length of
    its JSON header (8 bytes, little-endian), then the header, ``{...}``."""
    return len(head) > 8 and head[8:9] == b'{'


def checkpoint_file_problem(filename: str) -> Optional[str]:
    """Why an existing local file cannot be a checkpoint, judged by its bytes.

    torch writes a zip archive (or, in its legacy format, a pickle, whose
    first byte is the protocol opcode 0x80); a safetensors file starts with
    its header's length and the header.

    Returns:
        str, optional: The problem (empty, truncated, not a checkpoint), or
        None when the file may be a checkpoint.
    """
    head = file_head(filename)
    if not head:
        return 'the file is empty (0 bytes)'
    if head.startswith(b'PK'):
        return None if zipfile.is_zipfile(filename) else (
            'the file is truncated or corrupted (its zip directory is missing)')
    if head.startswith(b'\x80') or is_safetensors_head(head):
        return None
    return f'it is neither a zip archive nor a pickle (it starts with {head!r})'


def read_safetensors(filename: str) -> object:
    """The tensors of a safetensors file, on the CPU; with ``meta`` if our converters wrote one.

    Returns:
        dict: The tensors, or ``{'state_dict': tensors, 'meta': dict}`` when
        the header holds :data:`SAFETENSORS_META_KEY` (what a converted
        ``.pth`` holds too).

    Raises:
        ValueError: Not a safetensors file (a PyTorch file named
            ``.safetensors`` among others), or a truncated or corrupted one.
    """
    unreadable = f'{filename} is not a readable safetensors file'
    head = file_head(filename)
    if not is_safetensors_head(head):
        kind = ('a PyTorch checkpoint (zip archive or pickle): name it .pth'
                if head.startswith((b'PK', b'\x80')) else 'the file is empty (0 bytes)' if not head
                else f'it has no safetensors header (it starts with {head!r})')
        raise ValueError(f'{unreadable}: {kind}')
    try:
        with safe_open(filename, framework='pt', device='cpu') as file:
            tensors = {key: file.get_tensor(key) for key in file.keys()}
            meta_text = (file.metadata() or {}).get(SAFETENSORS_META_KEY)
        meta = None if meta_text is None else json.loads(meta_text)
    except Exception as error:  # safetensors' SafetensorError, json's errors
        raise ValueError(f'{unreadable} (truncated or corrupted?): {one_line_reason(error)}') from error
    return tensors if meta is None else dict(state_dict=tensors, meta=meta)


def read_checkpoint(filename: str) -> object:
    """Load a checkpoint file or URL onto the CPU with ``weights_only`` safety.

    Besides tensors and containers, the unpickler accepts only
    :func:`~mmrmt.checkpoint.weights_only.checkpoint_safe_globals`: upstream
    scripts' argparse arguments and mmengine's training state. A file named
    ``.safetensors`` (or whose bytes are one) is read by
    :func:`read_safetensors`.

    Raises:
        FileNotFoundError: The path does not exist.
        ValueError: The file is not a PyTorch or safetensors checkpoint
            (empty, truncated, another kind of file) or holds objects that
            are not allowed (a URL's copy fetched now is then removed).
    """
    if is_url(filename):
        with copy_dropped_if_refused(filename):
            return read_checkpoint(fetch_checkpoint(filename))
    if not osp.isfile(filename):
        raise FileNotFoundError(f'checkpoint not found: {filename}')
    if is_safetensors_name(filename) or is_safetensors_head(file_head(filename)):
        return read_safetensors(filename)
    unreadable = f'{filename} is not a readable PyTorch checkpoint'
    problem = checkpoint_file_problem(filename)
    if problem is not None:
        raise ValueError(f'{unreadable}: {problem}')
    try:
        return load_with_checkpoint_types(filename, map_location='cpu')
    except Exception as error:  # torch raises many kinds for a foreign file
        raise ValueError(f'{unreadable}: {one_line_reason(error)}') from error


def written_by_mmengine(checkpoint: object) -> bool:
    """Whether ``checkpoint`` was saved by an mmengine runner (mmdet 3.x / mmseg 1.x
    training, e.g. mmrmt's tools/train.py): the whole model under ``state_dict``
    (its backbone under ``backbone.``), the run's config text in ``meta['cfg']``."""
    return (isinstance(checkpoint, dict) and isinstance(checkpoint.get('meta'), dict)
            and 'mmengine_version' in checkpoint['meta'])


def extract_state_dict(checkpoint: object, source: str = 'checkpoint', prefix: str = '') -> StateDict:
    """Unwrap ``state_dict``/``model``/``model_ema`` and strip ``module.``.

    Args:
        checkpoint: What :func:`read_checkpoint` returned.
        source (str): Name of the file, for error messages.
        prefix (str): Keep only keys starting with it, with it removed
            (e.g. ``'backbone.'`` to take a backbone out of a detector).
    """
    if not isinstance(checkpoint, dict):
        raise ValueError(f'{source} holds a {type(checkpoint).__name__}, not a state dict')
    for wrapper in STATE_DICT_WRAPPERS:
        if isinstance(checkpoint.get(wrapper), dict):
            checkpoint = checkpoint[wrapper]
            break
    state_dict = {}
    for key, value in checkpoint.items():
        if key.startswith('module.'):
            key = key[len('module.'):]
        if prefix:
            if not key.startswith(prefix):
                continue
            key = key[len(prefix):]
        state_dict[key] = value
    not_tensors = [key for key, value in state_dict.items() if not isinstance(value, torch.Tensor)]
    if not state_dict or not_tensors:
        detail = f'entries that are not tensors: {not_tensors[:5]}' if not_tensors else (
            f'no weights{" under prefix " + repr(prefix) if prefix else ""}')
        raise ValueError(f'{source} is not a model checkpoint: {detail}')
    return state_dict

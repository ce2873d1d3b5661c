"""The one read of mmrmt: a checkpoint file or http(s) URL, read safely (a PyTorch file weights only, a safetensors
file, by name or header, as tensors and a text header), its weights taken out; the gate of a run's. Every problem is
one line naming the file: ``FileNotFoundError``, ``ValueError`` or, for Python objects, ``CheckpointRefusedError``."""
import json
import os
import os.path as osp
import zipfile
from contextlib import contextmanager
from typing import Dict, Iterator, Optional
from urllib.parse import urlparse

import torch
from safetensors import safe_open

from .saved_config import resumed_config
from .weights_only import CheckpointRefusedError, load_weights_only, one_line_reason

#: A network's weights: key -> tensor.
StateDict = Dict[str, torch.Tensor]
#: Wrappers under which training scripts store the weights, in order of preference.
STATE_DICT_WRAPPERS = ('state_dict', 'model', 'model_ema')
#: Where our converters keep a checkpoint's ``meta`` in a safetensors header (strings only): JSON text.
SAFETENSORS_META_KEY = 'mmrmt_meta'


def is_remote(path: str) -> bool:
    """Whether ``path`` names something a loader fetches (``scheme://``: a URL, a storage backend)."""
    return '://' in path


def is_url(path: str) -> bool:
    """Whether ``path`` is an http(s) URL (the remote paths :func:`read_checkpoint` reads)."""
    return path.startswith(('http://', 'https://'))


def is_safetensors_name(path: object) -> bool:
    """Whether ``path`` ends in ``.safetensors``, in any case."""
    return str(path).lower().endswith('.safetensors')


@contextmanager
def copy_dropped_if_refused(url: str) -> Iterator[str]:
    """Within the block, a copy of ``url`` the block puts into the hub cache (at the path yielded: where torch's hub
    cache, and timm's loaders, keep the file of ``url``) is removed again if the block raises (the file was refused:
    no loader may find it there later); a copy that was there before is kept."""
    local = osp.join(torch.hub.get_dir(), 'checkpoints', osp.basename(urlparse(url).path) or 'checkpoint.pth')
    fetched_here = not osp.exists(local)
    try:
        yield local
    except BaseException:
        if fetched_here and osp.isfile(local):
            os.remove(local)
        raise


def fetch_checkpoint(url: str, local: str) -> str:
    """``local``, the copy of ``url`` in torch's hub cache (where mmengine's loaders look too), downloaded unless
    there; a ``ValueError`` saying why it could not be."""
    try:
        if not osp.isfile(local):
            os.makedirs(osp.dirname(local), exist_ok=True)
            torch.hub.download_url_to_file(url, local, progress=False)
        return local
    except OSError as error:  # urllib's HTTPError and URLError, a timeout, an unwritable cache
        raise ValueError(f'{url} could not be fetched ({one_line_reason(error)}); mmrmt downloads a checkpoint only '
                         'when the network allows: download it yourself and give the file\'s path') from None


def is_safetensors_head(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a safetensors file: 8 bytes of header length, then ``{``."""
    return len(head) > 8 and head[8:9] == b'{'


def checkpoint_file_problem(filename: str, head: bytes, safetensors: bool = False) -> Optional[str]:
    """Why the local file ``filename``, starting with ``head`` (16 bytes), cannot be a PyTorch checkpoint (or,
    with ``safetensors``, a safetensors file); None if it may be."""
    if not head:
        return 'the file is empty (0 bytes)'
    if safetensors:
        return None if is_safetensors_head(head) else (
            'a PyTorch checkpoint (zip archive or pickle): name it .pth' if head.startswith((b'PK', b'\x80'))
            else f'it has no safetensors header (it starts with {head!r})')
    if head.startswith(b'PK'):
        return None if zipfile.is_zipfile(filename) else (
            'the file is truncated or corrupted (its zip directory is missing)')
    return None if head.startswith(b'\x80') else f'it is neither a zip archive nor a pickle (it starts with {head!r})'


def read_checkpoint(filename: str) -> object:
    """Load a checkpoint file or http(s) URL onto the CPU, weights only (see the module).

    Raises:
        FileNotFoundError: The path does not exist.
        ValueError: Not a PyTorch or safetensors checkpoint (empty, truncated, another kind of file).
        CheckpointRefusedError: The file holds objects the weights-only unpickler refuses (a URL's copy
            fetched now is then removed from the hub cache).
    """
    if is_url(filename):
        with copy_dropped_if_refused(filename) as local:
            return read_checkpoint(fetch_checkpoint(filename, local))
    if not osp.isfile(filename):
        raise FileNotFoundError(f'checkpoint not found: {filename}')
    with open(filename, 'rb') as file:
        head = file.read(16)
    safetensors = is_safetensors_name(filename) or is_safetensors_head(head)
    unreadable = f'{filename} is not a readable {"safetensors file" if safetensors else "PyTorch checkpoint"}'
    problem = checkpoint_file_problem(filename, head, safetensors)
    if problem is not None:
        raise ValueError(f'{unreadable}: {problem}')
    try:
        if not safetensors:
            return load_weights_only(filename, map_location='cpu')
        with safe_open(filename, framework='pt', device='cpu') as file:
            tensors = {key: file.get_tensor(key) for key in file.keys()}
            meta = (file.metadata() or {}).get(SAFETENSORS_META_KEY)
        return tensors if meta is None else dict(state_dict=tensors, meta=json.loads(meta))
    except CheckpointRefusedError:  # its own one line
        raise
    except Exception as error:  # past the header, torch and safetensors raise many kinds for a damaged file
        raise ValueError(f'{unreadable} (truncated or corrupted?): {one_line_reason(error)}') from error


def extract_state_dict(checkpoint: object, source: str = 'checkpoint', prefix: str = '') -> StateDict:
    """The weights of ``checkpoint`` (``state_dict`` / ``model`` / ``model_ema`` unwrapped, ``module.`` stripped)
    under ``prefix`` (e.g. ``'backbone.'``), without it; a ``ValueError`` naming ``source`` if there are none
    or some are not tensors."""
    if not isinstance(checkpoint, dict):
        raise ValueError(f'{source} holds a {type(checkpoint).__name__}, not a state dict')
    checkpoint = next((checkpoint[key] for key in STATE_DICT_WRAPPERS if isinstance(checkpoint.get(key), dict)),
                      checkpoint)
    state_dict = {}
    for key, value in checkpoint.items():
        key = key[len('module.'):] if key.startswith('module.') else key
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = value
    not_tensors = [key for key, value in state_dict.items() if not isinstance(value, torch.Tensor)]
    if not state_dict or not_tensors:
        detail = f'entries that are not tensors: {not_tensors[:5]}' if not_tensors else (
            f'no weights{" under prefix " + repr(prefix) if prefix else ""}')
        raise ValueError(f'{source} is not a model checkpoint: {detail}')
    return state_dict


def read_checkpoint_to_load(path: str, role: str, resume: bool = False) -> Optional[dict]:
    """The checkpoint ``path`` (local or http(s); None for another remote path) a run loads as ``role`` (e.g.
    ``'--resume'``), ``resume`` from it or not, read once: the gate of the runner (every launcher) and the tools.

    Raises:
        ValueError: One line naming ``role``, the file, the problem and the fix.
        CheckpointRefusedError: The file holds Python objects besides weights (its own line).
    """
    if is_remote(path) and not is_url(path):
        return None
    path = osp.expanduser(path)
    fix = 'give a checkpoint this run wrote' if resume else 'give the path of a checkpoint file'
    try:
        checkpoint = read_checkpoint(path)
        extract_state_dict(checkpoint, path)
    except FileNotFoundError:
        raise ValueError(f'{role} {path} does not exist; {fix}') from None
    except ValueError as error:  # a URL that could not be fetched says its own fix
        raise ValueError(f'{role} {error}' + ('' if is_url(path) else f'; {fix}')) from error
    if not resume:
        return checkpoint
    try:
        resumed_config(checkpoint, path)  # mmengine's resume runs this text: refused unless plain data
    except ValueError as error:
        raise ValueError(f'{role} {error}') from error
    meta = checkpoint['meta'] if isinstance(checkpoint.get('meta'), dict) else {}
    lacking = ([] if 'message_hub' in checkpoint else ['message_hub']) + [
        f'meta.{key}' for key in ('epoch', 'iter') if key not in meta]
    if lacking:
        raise ValueError(f'{role} {path} is not a training checkpoint (it has no {", ".join(lacking)}); resume from a '
                         f'file tools/train.py wrote, or start from these weights with --cfg-options load_from={path}')
    return checkpoint

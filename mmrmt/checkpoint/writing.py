"""Write a checkpoint as ``.pth`` or, weights only, as ``.safetensors``; its SHA-256.

The converters' one way to save (through :func:`mmrmt.utils.write_checked`):
the destination's suffix (in any case: ``.safetensors``, ``.SAFETENSORS``)
chooses the format, as with timm's files. Either is written into the file
at ``path`` as it exists (the converters create it first), so it keeps that
file's permissions: the umask's usual ones, as for any file. A
safetensors file holds the tensors and, in its header, the checkpoint's
``meta`` as JSON text (:data:`~.reading.SAFETENSORS_META_KEY`), which
:func:`~.reading.read_safetensors` gives back as the ``.pth`` holds it.
"""
import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import save

from .reading import SAFETENSORS_META_KEY


def save_checkpoint(payload: dict, path: str, safetensors: bool) -> None:
    """Save ``payload`` (``{'state_dict': tensors, 'meta': plain data}``) to ``path``.

    Args:
        payload (dict): The weights under ``state_dict`` and optional ``meta``.
        path (str): The file to write.
        safetensors (bool): Write a safetensors file (weights and the meta as
            JSON, no pickle) rather than ``torch.save``'s.
    """
    if not safetensors:
        torch.save(payload, path)
        return
    # Each tensor on its own contiguous storage: safetensors refuses shared or strided ones.
    tensors = {key: value.detach().contiguous().clone() for key, value in payload['state_dict'].items()}
    metadata = {'format': 'pt'}
    if payload.get('meta') is not None:
        metadata[SAFETENSORS_META_KEY] = json.dumps(payload['meta'])
    # safetensors' save_file writes a new file of mode 0600 and renames it onto ``path``: the bytes go into ``path``
    Path(path).write_bytes(save(tensors, metadata=metadata))


def sha256_of(path: str) -> str:
    """The SHA-256 of the file at ``path``, in hex (what ``sha256sum`` prints)."""
    digest = hashlib.sha256()
    with open(path, 'rb') as file:
        for block in iter(lambda: file.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()

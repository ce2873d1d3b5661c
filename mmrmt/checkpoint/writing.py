"""Write a checkpoint as ``.pth`` or, weights only, as ``.safetensors`` (the converters' one way to save)."""
import json
from pathlib import Path

import torch
from safetensors.torch import save

from .reading import SAFETENSORS_META_KEY


def save_checkpoint(payload: dict, path: str, safetensors: bool) -> None:
    """Save ``payload`` (``{'state_dict': tensors, 'meta': plain data}``) into the file at ``path``
    (which keeps its permissions): ``torch.save``'s format, or with ``safetensors`` the tensors and the
    ``meta`` as JSON in the header (:data:`~.reading.SAFETENSORS_META_KEY`), no pickle."""
    if not safetensors:
        with open(path, 'wb') as file:  # by file, torch names the archive's folder 'archive', not after ``path``
            torch.save(payload, file)
        return
    # Each tensor on its own contiguous storage: safetensors refuses shared or strided ones.
    tensors = {key: value.detach().contiguous().clone() for key, value in payload['state_dict'].items()}
    metadata = {'format': 'pt'}
    if payload.get('meta') is not None:
        metadata[SAFETENSORS_META_KEY] = json.dumps(payload['meta'])
    # safetensors' save_file writes a new file of mode 0600 and renames it onto ``path``: the bytes go into ``path``
    Path(path).write_bytes(save(tensors, metadata=metadata))

"""The authors' ResT (a clone of github.com/wofmanaf/ResT), run beside ours by tools/analysis_tools/benchmark.py.

Nothing of theirs is copied here: :func:`load_upstream_module` imports
``models/rest.py`` from the user's clone, :func:`build_upstream` builds
their variant and loads a checkpoint in their (and our) key layout, and
:func:`upstream_features` walks their stem, patch embeddings and blocks to
emit the four stage maps a detection backbone needs (their classifier's
pooling and head are skipped; stage 4 gets their final norm).
"""
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import List

import torch
from torch import nn

UPSTREAM_FILE = Path('models') / 'rest.py'


def check_upstream_repo(repo: str) -> Path:
    """``repo``'s ``models/rest.py``; a one-line error if it is not a clone of wofmanaf/ResT."""
    path = Path(repo) / UPSTREAM_FILE
    if not path.is_file():
        raise FileNotFoundError(f'--upstream-repo {repo}: no {UPSTREAM_FILE} there; give the root of a clone '
                                'of https://github.com/wofmanaf/ResT (git clone https://github.com/wofmanaf/ResT).')
    return path


def load_upstream_module(repo: str) -> ModuleType:
    """Import the clone's ``models/rest.py`` as module ``upstream_rest`` (timm registers its variants)."""
    path = check_upstream_repo(repo)
    spec = importlib.util.spec_from_file_location('upstream_rest', path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # timm's register_model looks the module up
    spec.loader.exec_module(module)
    return module


def build_upstream(repo: str, arch: str, checkpoint: str) -> nn.Module:
    """Their ``rest_<arch>()`` with the backbone weights of ``checkpoint`` (only their head left as built)."""
    module = load_upstream_module(repo)
    factory = getattr(module, f'rest_{arch.lower()}', None)
    if factory is None:
        raise ValueError(f'--upstream-repo: {UPSTREAM_FILE} has no rest_{arch.lower()}; the variants are '
                         'lite, small, base, large.')
    model = factory()
    state = torch.load(checkpoint, map_location='cpu', weights_only=True)['model']
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not key.startswith('head.') for key in missing):
        raise RuntimeError(f'the weights do not fit the upstream rest_{arch}: missing {missing}, '
                           f'unexpected {unexpected}.')
    return model


def upstream_features(model: nn.Module, x: torch.Tensor) -> List[torch.Tensor]:
    """The upstream network's four stage outputs, (B, C, h, w), as their ``forward`` computes them."""
    x = model.stem(x)
    batch, _, height, width = x.shape
    x = x.flatten(2).transpose(1, 2)
    outs = []
    for stage in range(1, 5):
        if stage > 1:
            x, (height, width) = getattr(model, f'patch_embed_{stage}')(x)
        for block in getattr(model, f'stage{stage}'):
            x = block(x, height, width)
        if stage == 4:
            x = model.norm(x)
        x = x.transpose(1, 2).reshape(batch, -1, height, width)
        outs.append(x)
    return outs

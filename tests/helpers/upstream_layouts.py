"""Upstream ImageNet checkpoint layouts (tests/data/upstream_checkpoint_layouts.txt)."""
from functools import lru_cache
from pathlib import Path
from typing import Dict, Tuple

import torch

LAYOUTS_FILE = Path(__file__).parents[1] / 'data' / 'upstream_checkpoint_layouts.txt'


@lru_cache()
def upstream_layouts() -> Dict[str, Dict[str, Tuple[int, ...]]]:
    """Variant name (e.g. 'rmt-t', 'rest-lite') -> {key: shape}."""
    layouts: Dict[str, Dict[str, Tuple[int, ...]]] = {}
    current = None
    for line in LAYOUTS_FILE.read_text().splitlines():
        if line.startswith('## '):
            current = layouts.setdefault(line[3:].split(':')[0].strip(), {})
        elif line and not line.startswith('#'):
            key, shape = line.split(' ', 1)
            current[key] = tuple(int(s) for s in shape.strip('()').split(',') if s.strip())
    return layouts


def random_upstream_state_dict(variant: str, seed: int = 0) -> Dict[str, torch.Tensor]:
    """A state dict in the upstream layout of ``variant`` with random values."""
    generator = torch.Generator().manual_seed(seed)
    return {key: (torch.randint(0, 100, shape, generator=generator) if key.endswith('num_batches_tracked')
                  else torch.rand(shape, generator=generator) + 0.5)
            for key, shape in upstream_layouts()[variant].items()}


def upstream_param_count(variant: str, without: Tuple[str, ...] = ()) -> int:
    """Parameters (not BN statistics) of ``variant``, leaving out key prefixes ``without``."""
    total = 0
    for key, shape in upstream_layouts()[variant].items():
        if key.startswith(without) or key.endswith(('running_mean', 'running_var', 'num_batches_tracked')):
            continue
        if key.endswith(('Relpos.angle', 'Relpos.decay')):
            continue
        total += torch.Size(shape).numel()
    return total


def assert_backbone_file_loads(backbone_cls: type, arch, path: Path, expected: Dict[str, torch.Tensor]) -> None:
    """The backbone file ``path`` loads through ``init_cfg`` into ``backbone_cls(arch)`` with ``expected``'s values."""
    backbone = backbone_cls(arch=arch, init_cfg=dict(type='Pretrained', checkpoint=str(path)))
    backbone.init_weights()
    own = backbone.state_dict()
    for key, value in expected.items():
        assert torch.equal(own[key], value.to(own[key].dtype)), key

"""What every converter script does: read, convert, check by loading, save."""
import argparse
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Type

import torch

from mmrmt.checkpoint import extract_state_dict, load_pretrained, read_checkpoint
from mmrmt.models.backbones.base_backbone import PyramidBackbone

StateDict = Dict[str, torch.Tensor]


def parse_args(description: str, argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('src', help='the checkpoint to convert (path or URL)')
    parser.add_argument('dst', help='where to write the converted backbone checkpoint')
    return parser.parse_args(argv)


def convert_file(src: str, dst: str, backbone_cls: Type[PyramidBackbone],
                 convert: Callable[[StateDict], StateDict],
                 arch_of: Callable[[StateDict], Tuple[str, list, list]]) -> str:
    """Convert ``src`` to ``dst`` and prove ``dst`` loads into the backbone.

    The written file is ``{'state_dict': ..., 'meta': {'arch', 'source'}}``;
    it is checked by loading it the way ``init_cfg`` does, strictly, into a
    ``backbone_cls`` of the detected variant.

    Returns:
        str: The detected ``arch``.
    """
    state_dict = convert(extract_state_dict(read_checkpoint(src), src))
    arch, dims, depths = arch_of(state_dict)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    torch.save(dict(state_dict=state_dict, meta=dict(arch=arch, source=str(src))), dst)
    backbone = backbone_cls(arch=arch)
    load_pretrained(backbone, dst, dropped_prefixes=backbone.dropped_checkpoint_prefixes,
                    new_prefixes=backbone.new_checkpoint_prefixes)
    print(f'{src} -> {dst}: {backbone_cls.__name__} arch={arch!r} (embed_dims {dims}, depths {depths}), '
          f'{len(state_dict)} tensors')
    return arch

"""What every converter script does: check the destination, read, convert,
write to a temporary file, prove it by a strict load, then replace the
destination.

A converter never destroys a file: an existing destination, or one that is
the source itself, is refused without ``--force``; the result reaches the
destination (atomically, with :func:`os.replace`) only after it has loaded
strictly into the detected backbone, so a failure leaves every file as it was.
"""
import argparse
import inspect
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple, Type, Union

import torch
from mmengine.config import Config, ConfigDict

from mmrmt.checkpoint import extract_state_dict, load_pretrained, read_checkpoint
from mmrmt.checkpoint.loading import written_by_mmengine
from mmrmt.models.backbones.base_backbone import PyramidBackbone
from mmrmt.utils import PreflightError, check_new_file, replaced_atomically

StateDict = Dict[str, torch.Tensor]
Arch = Union[str, dict]
ArchOf = Callable[[StateDict], Tuple[str, list, list]]


def parse_args(description: str, argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('src', help='the checkpoint to convert (path or URL)')
    parser.add_argument('dst', help='where to write the converted backbone checkpoint')
    parser.add_argument('--force', action='store_true',
                        help='replace an existing destination (even the source itself)')
    return parser.parse_args(argv)


def trained_arch(checkpoint: dict, backbone_cls: Type[PyramidBackbone], src: str) -> Arch:
    """The ``arch`` of the backbone an mmengine training run used, from its config text.

    Raises:
        ValueError: The run trained another backbone type.
    """
    backbone = Config.fromstring(checkpoint['meta']['cfg'], file_format='.py').model.backbone
    if backbone.get('type') != backbone_cls.__name__:
        raise ValueError(f'{src} was trained with the backbone {backbone.get("type")!r}, not '
                         f'{backbone_cls.__name__}; use the converter of that backbone')
    arch = backbone.get('arch', inspect.signature(backbone_cls).parameters['arch'].default)
    return arch.to_dict() if isinstance(arch, ConfigDict) else arch


def backbone_weights(src: str, backbone_cls: Type[PyramidBackbone],
                     convert: Callable[[StateDict], StateDict], arch_of: ArchOf) -> Tuple[StateDict, Arch]:
    """The backbone's weights under mmrmt's keys, and its ``arch``.

    A checkpoint an mmengine runner wrote (mmrmt's tools/train.py) holds the
    backbone already in mmrmt's keys, under ``backbone.``, and its config
    names the arch; any other file goes through ``convert`` and the arch is
    recognised from the shapes.
    """
    checkpoint = read_checkpoint(src)
    if written_by_mmengine(checkpoint):
        return (extract_state_dict(checkpoint, src, prefix='backbone.'),
                trained_arch(checkpoint, backbone_cls, src))
    state_dict = convert(extract_state_dict(checkpoint, src))
    return state_dict, arch_of(state_dict)[0]


def convert_file(src: str, dst: str, backbone_cls: Type[PyramidBackbone],
                 convert: Callable[[StateDict], StateDict], arch_of: ArchOf,
                 force: bool = False) -> Arch:
    """Convert ``src`` to ``dst`` and prove ``dst`` loads into the backbone.

    The written file is ``{'state_dict': ..., 'meta': {'arch', 'source'}}``;
    before it replaces ``dst`` it is loaded the way ``init_cfg`` does,
    strictly, into a ``backbone_cls`` of the detected variant.

    Raises:
        PreflightError: ``dst`` exists, or is ``src``, and not ``force``; or
            its folder cannot be written.
        ValueError: ``src`` is not a checkpoint of this backbone.

    Returns:
        str | dict: The detected ``arch``.
    """
    check_new_file(dst, 'destination', force, source=src)
    state_dict, arch = backbone_weights(src, backbone_cls, convert, arch_of)
    backbone = backbone_cls(arch=arch)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(dst) as temporary:
        torch.save(dict(state_dict=state_dict, meta=dict(arch=arch, source=str(src))), temporary)
        try:
            load_pretrained(backbone, temporary, new_prefixes=backbone.new_checkpoint_prefixes,
                            dropped_prefixes=backbone.dropped_checkpoint_prefixes)
        except ValueError as error:
            raise ValueError(f'the conversion of {src} does not load into {backbone_cls.__name__}, '
                             f'so {dst} was not written: {error}') from error
    print(f'{src} -> {dst}: {backbone_cls.__name__} arch={arch!r}, {len(state_dict)} tensors')
    return arch


def run_converter(description: str, argv: Optional[List[str]], backbone_cls: Type[PyramidBackbone],
                  convert: Callable[[StateDict], StateDict], arch_of: ArchOf) -> None:
    """A converter script's ``main``: any problem ends it with one ``error:`` line."""
    args = parse_args(description, argv)
    try:
        convert_file(args.src, args.dst, backbone_cls, convert, arch_of, args.force)
    except (PreflightError, ValueError, FileNotFoundError) as error:
        sys.exit(f'error: {error}')

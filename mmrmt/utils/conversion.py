"""What every converter of tools/model_converters does: check the destination (an existing one needs ``--force``,
an input is never one), read, convert, write to a temporary file, prove it by a strict load, then move it into
place, so a failure leaves every file as it was."""
import argparse
import hashlib
import inspect
from functools import partial
from pathlib import Path
from typing import Callable, List, Optional, Tuple, Type, Union

from mmrmt.checkpoint import (StateDict, extract_state_dict, is_safetensors_name, load_pretrained, read_saved_config,
                              save_checkpoint)
from mmrmt.models.backbones.base_backbone import PyramidBackbone
from ..atomic_file import UnwritableError, replaced_atomically
from .output_guard import check_new_file
from .preflight import PreflightError, file_errors_as_tool_errors
from .run_checkpoint import read_run_checkpoint

Arch = Union[str, dict]


def converter_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments every converter takes: ``src``, ``dst`` and ``--force``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('src', help='the checkpoint to convert (path or URL)')
    parser.add_argument('dst', help='where to write the converted checkpoint (.pth, or .safetensors: the weights '
                        'only, no pickle); its SHA-256 is printed')
    parser.add_argument('--force', action='store_true',
                        help='replace an existing destination (never an input: the source or the config)')
    return parser


def write_checked(payload: dict, src: str, dst: str, verify: Callable[[str], None]) -> None:
    """Save ``payload``, converted from ``src`` (safetensors for a ``.safetensors`` name), to a temporary file that
    replaces ``dst`` once ``verify(written file)`` has passed (else ``dst`` is left as it was, and ``verify``'s
    ``ValueError`` is said in a :class:`PreflightError`); print its SHA-256."""
    try:  # the writable check cannot see every refusal (root under /proc, a full disk)
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        with replaced_atomically(dst) as temporary:
            save_checkpoint(payload, temporary, safetensors=is_safetensors_name(dst))
            verify(temporary)
            digest = hashlib.sha256(Path(temporary).read_bytes()).hexdigest()  # as large as the weights in memory
    except UnwritableError:  # its own line
        raise
    except OSError as error:
        raise PreflightError(f'{dst} could not be written ({error.strerror or error}), so it was left as it was: '
                             'choose another destination') from error
    except ValueError as error:
        raise PreflightError(f'the conversion of {src} does not load back strictly, so {dst} was not written: '
                             f'{error}') from error
    print(f'{dst}: sha256 {digest}')


def trained_arch(checkpoint: dict, backbone_cls: Type[PyramidBackbone], src: str) -> Arch:
    """The ``arch`` of the backbone an mmengine run trained, read from its saved config as data (a ``ValueError``
    when that is missing or not plain data, or names another backbone type)."""
    text = checkpoint['meta'].get('cfg')
    if not isinstance(text, str):
        raise ValueError(f'{src} has no saved config (meta.cfg) naming its backbone')
    model = read_saved_config(text, f'{src} (meta.cfg)').get('model')
    backbone = model.get('backbone') if isinstance(model, dict) else None
    kind = backbone.get('type') if isinstance(backbone, dict) else None
    if kind != backbone_cls.__name__:
        raise ValueError(f'{src} was trained with the backbone {kind!r}, not '
                         f'{backbone_cls.__name__}; use the converter of that backbone')
    return backbone.get('arch', inspect.signature(backbone_cls).parameters['arch'].default)


def backbone_weights(src: str, backbone_cls: Type[PyramidBackbone]) -> Tuple[StateDict, Arch]:
    """The backbone's weights under mmrmt's keys, and its ``arch``: those of a checkpoint an mmengine runner wrote;
    else converted by the backbone's ``upstream_files``, the classifier dropped, the arch recognised from the
    shapes."""
    checkpoint = read_run_checkpoint(src, 'source', remote_ok=False)
    meta = checkpoint.get('meta') if isinstance(checkpoint, dict) else None
    if isinstance(meta, dict) and 'mmengine_version' in meta:  # an mmengine runner wrote it
        return (extract_state_dict(checkpoint, src, prefix='backbone.'),
                trained_arch(checkpoint, backbone_cls, src))
    upstream = backbone_cls.upstream_files
    converted = upstream.convert(extract_state_dict(checkpoint, src))
    state_dict = {key: value for key, value in converted.items()
                  if not key.startswith(backbone_cls.dropped_checkpoint_prefixes)}
    return state_dict, upstream.variant(state_dict, backbone_cls.arch_zoo, backbone_cls.__name__)


def backbone_converter_main(backbone_cls: Type[PyramidBackbone], doc: str) -> Callable[[Optional[List[str]]], None]:
    """The ``main`` of the converter script of ``backbone_cls`` (a backbone with ``upstream_files``; ``doc``'s first
    line as its help): ``src dst [--force]`` converts ``src`` to ``dst`` (``{'state_dict', 'meta': {'arch',
    'source'}}``), proved by loading it as ``init_cfg`` does into the backbone of the detected variant.

    Raises (from ``main``):
        PreflightError: ``dst`` exists (without ``--force``) or is ``src``, cannot be written, or ``src`` is
            not a checkpoint of this backbone.
    """

    def main(argv: Optional[List[str]] = None) -> None:
        args = converter_arguments(doc.split('\n')[0]).parse_args(argv)
        check_new_file(args.dst, 'destination', args.force, inputs=[('the source', args.src)])
        with file_errors_as_tool_errors():
            state_dict, arch = backbone_weights(args.src, backbone_cls)
        backbone = backbone_cls(arch=arch)
        write_checked(dict(state_dict=state_dict, meta=dict(arch=arch, source=str(args.src))), args.src, args.dst,
                      partial(load_pretrained, backbone, new_prefixes=backbone.new_checkpoint_prefixes,
                              dropped_prefixes=backbone.checkpoint_prefixes_to_drop()))
        print(f'{args.src} -> {args.dst}: {backbone_cls.__name__} arch={arch!r}, {len(state_dict)} tensors')

    return main

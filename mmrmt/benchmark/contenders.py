"""What one benchmark run compares: the torch implementations, the exported files in each runtime, the
authors' ResT, each a contender that one worker process runs."""
import argparse
from inspect import signature
from typing import List, Optional, Tuple

from mmrmt.deployment.runtime import runtime_label
from mmrmt.models import backbones

#: ``--backbone`` TYPE -> the registered backbone.
BACKBONE_TYPES = {'rmt': 'RMT', 'rest': 'ResT', 'resmlp': 'ResMLP'}
UPSTREAM_IMPL = 'upstream'
#: ``--amp`` value -> the precision of a torch contender; the suffix of its label.
AMP_PRECISIONS = {'none': 'f32', 'bf16': 'bf16', 'fp16': 'fp16', 'bf32': 'bf32'}
AUTOCAST_LABELS = {'f32': '', 'bf16': ' bf16 autocast', 'fp16': ' fp16 autocast', 'bf32': ' bf32'}
#: A worker's job: (its label in the table, torch impl, precision, runtime or None for torch, file, whether
#: torch.compile compiles the model's features, :mod:`mmrmt.utils.compiled_inference`).
Contender = Tuple[str, Optional[str], str, Optional[str], Optional[str], bool]


def parse_backbone(name: str) -> Tuple[str, str]:
    """The registered type and the arch of ``--backbone TYPE-ARCH`` (e.g. 'rmt-t' -> ('RMT', 't')).

    Raises:
        ValueError: One line naming the known types.
    """
    backbone, _, arch = name.lower().partition('-')
    if backbone not in BACKBONE_TYPES or not arch:
        raise ValueError(f'--backbone must be TYPE-ARCH with TYPE in {sorted(BACKBONE_TYPES)}, '
                         f'e.g. rmt-t; got {name!r}.')
    return BACKBONE_TYPES[backbone], arch


def backbone_type(config) -> str:
    """The registered name of a config's backbone type ('RMT' for 'RMT' or 'mmrmt.RMT')."""
    kind = config.model.backbone.type
    return (kind if isinstance(kind, str) else kind.__name__).rpartition('.')[2]


def takes_impl(backbone: str) -> bool:
    """Whether the backbone type ``backbone`` (a name in :mod:`mmrmt.models.backbones`) has an
    ``impl`` argument, a table of implementations (RMT's and ResT's ``'fast'`` and ``'reference'``)."""
    return 'impl' in signature(getattr(backbones, backbone)).parameters


def runtime_pairs(args: argparse.Namespace) -> List[Tuple[str, str]]:
    """(runtime, precision) of the rows of each --onnx file: onnxruntime in f32 only."""
    return [(runtime, precision) for runtime in args.runtime for precision in args.precision
            if runtime == 'openvino' or precision == 'f32']


def contenders(args: argparse.Namespace) -> List[Contender]:
    """The torch implementations (with --onnx at each --precision), with --compile each one compiled too
    ('fast compiled'), then each --onnx file in each runtime and precision ('onnxruntime FILE', 'openvino
    bf16 FILE'), or the authors' ResT with --upstream-repo."""
    torch_rows = [(eager_label(impl, precision, compiled), impl, precision, None, None, compiled)
                  for compiled in ((False, True) if args.compile else (False, ))
                  for precision in eager_precisions(args) for impl in args.impl]
    graphs = [(f'{runtime_label(runtime, precision)} {path}', None, precision, runtime, path, False)
              for path in args.onnx or () for runtime, precision in runtime_pairs(args)]
    upstream = [(UPSTREAM_IMPL, UPSTREAM_IMPL, 'f32', None, None, False)] if args.upstream_repo else []
    return torch_rows + graphs + upstream


def eager_precisions(args: argparse.Namespace) -> List[str]:
    """The precisions the torch contenders run at: each --precision with --onnx (tensor mode), else
    each --amp ('f32' for none)."""
    return list(args.precision) if args.onnx else [AMP_PRECISIONS[amp] for amp in args.amp]


def eager_label(impl: Optional[str], precision: str, compiled: bool = False) -> str:
    """A torch contender's label: its impl ('default' for the backbone's), 'compiled' if so, then its
    autocast if any."""
    return f'{impl or "default"}{" compiled" * compiled}{AUTOCAST_LABELS[precision]}'


def baseline_label(args: argparse.Namespace) -> str:
    """The contender the table's ratios compare with: the authors' ResT, else the reference
    implementation, else the first one given, in float32 unless no float32 row is asked for (--precision
    always holds f32; ``--amp bf16`` alone compares with the first impl in bf16)."""
    if args.upstream_repo:
        return UPSTREAM_IMPL
    precisions = eager_precisions(args)
    impl = 'reference' if 'reference' in args.impl else args.impl[0]
    return eager_label(impl, 'f32' if 'f32' in precisions else precisions[0])

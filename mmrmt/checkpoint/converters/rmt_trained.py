"""The RMT authors' trained detectors and segmentors, in mmdet 3.x / mmseg 1.x keys.

The authors trained RetinaNet, Mask R-CNN and Cascade Mask R-CNN with their
copy of mmdet 2.11 and UperNet / Semantic FPN with their copy of mmseg 0.13
(``detect/`` and ``segmentation/`` of github.com/qhfan/RMT), and saved them
as mmcv 1.x checkpoints: ``{'meta', 'state_dict', 'optimizer'[, 'amp']}``.
Reading those module definitions (identical in mmdet 2.28 / mmseg 0.30)
beside mmdet 3.3 / mmseg 1.2:

* every module these models use kept its attribute names, so the weights keep
  their keys: FPN ``lateral_convs`` / ``fpn_convs``; ``RPNHead.rpn_conv`` /
  ``rpn_cls`` / ``rpn_reg`` (one conv); ``Shared2FCBBoxHead`` and the cascade's
  ``ConvFCBBoxHead`` ``shared_convs`` / ``shared_fcs`` / ``fc_cls`` /
  ``fc_reg``, one per stage under ``roi_head.bbox_head.<stage>``;
  ``FCNMaskHead.convs`` / ``upsample`` / ``conv_logits`` (cascade: one per
  stage); ``RetinaHead.cls_convs`` / ``reg_convs`` / ``retina_cls`` /
  ``retina_reg``; ``UPerHead.psp_modules.<i>.1`` / ``bottleneck`` /
  ``lateral_convs`` / ``fpn_convs`` / ``fpn_bottleneck``;
  ``FPNHead.scale_heads.<level>.<i>`` (the upsampling layers between the
  convs hold no weights, in both versions at the same indices);
  ``FCNHead.convs``; ``conv_seg``; mmcv's ``ConvModule`` names its parts
  ``conv`` and ``bn``;
* the class conventions did not change: ``fc_cls`` has ``num_classes + 1``
  outputs with the background last, ``fc_reg`` four per class, sigmoid heads
  (RPN, RetinaNet) ``num_anchors * num_classes`` with the anchors
  ratio-major, ``conv_seg`` one per class; COCO's 80 and ADE20K's 150 class
  names are in the same order in both versions;
* the RMT backbone has the upstream names in mmrmt, except that the upstream
  RMT builds an output LayerNorm (``backbone.extra_norms.<i>``) for each of
  its four stages whichever it emits, mmrmt's only for its ``out_indices``.
  RetinaNet feeds stages 2-4 to its FPN, so the trained file's
  ``extra_norms.0`` never took part in a forward pass: it is dropped.

So Mask R-CNN, Cascade Mask R-CNN, UperNet and Semantic FPN files load as
they are, RetinaNet files after the drop. :func:`convert_upstream_trained`
accounts for every key all the same: a key of no module above is an error,
as is a key or shape the target model does not have, or a key it lacks.
"""
import re
from typing import Dict, Mapping, NamedTuple, Optional, Sequence

from ..fit import TensorSpec, first_few, fit_problems, specs
from ..reading import StateDict

_PARAM = r'(weight|bias)'
_BN = r'(weight|bias|running_mean|running_var|num_batches_tracked)'
_CONV_MODULE = rf'(conv\.{_PARAM}|bn\.{_BN})'  # mmcv ConvModule with a BN/SyncBN norm

#: The modules of the upstream models other than the backbone: name -> key pattern.
UPSTREAM_HEAD_LAYOUT: Dict[str, str] = {
    'FPN neck': rf'neck\.(lateral_convs|fpn_convs)\.\d+\.{_CONV_MODULE}',
    'RPNHead': rf'rpn_head\.rpn_(conv|cls|reg)\.{_PARAM}',
    'RoI box head': (rf'roi_head\.bbox_head\.(\d+\.)?(shared_convs\.\d+\.{_CONV_MODULE}|'
                     rf'shared_fcs\.\d+\.{_PARAM}|fc_(cls|reg)\.{_PARAM})'),
    'RoI mask head': (rf'roi_head\.mask_head\.(\d+\.)?(convs\.\d+\.{_CONV_MODULE}|'
                      rf'(upsample|conv_logits)\.{_PARAM})'),
    'RetinaHead': rf'bbox_head\.((cls|reg)_convs\.\d+\.{_CONV_MODULE}|retina_(cls|reg)\.{_PARAM})',
    'UPerHead': (rf'decode_head\.(psp_modules\.\d+\.1|bottleneck|lateral_convs\.\d+|fpn_convs\.\d+|'
                 rf'fpn_bottleneck)\.{_CONV_MODULE}'),
    'FPNHead': rf'decode_head\.scale_heads\.\d+\.\d+\.{_CONV_MODULE}',
    'FCNHead (auxiliary)': rf'auxiliary_head\.convs\.\d+\.{_CONV_MODULE}',
    'segmentation classifier': rf'(decode_head|auxiliary_head)\.conv_seg\.{_PARAM}',
}
BACKBONE_PREFIX = 'backbone.'
_OUTPUT_NORM = re.compile(r'backbone\.extra_norms\.(\d+)\.(weight|bias)')
#: Last layers whose size is the class count, for the mismatch message.
_CLASS_LAYERS = ('fc_cls', 'conv_logits', 'retina_cls', 'conv_seg')


class Conversion(NamedTuple):
    """What :func:`convert_upstream_trained` made of a file.

    Args:
        state_dict (dict): The weights under the target model's keys.
        dropped (dict): Each dropped key of the file and why.
    """
    state_dict: StateDict
    dropped: Dict[str, str]


def upstream_module(key: str) -> Optional[str]:
    """The upstream module (a name of :data:`UPSTREAM_HEAD_LAYOUT`, or
    'RMT backbone') that holds ``key``, or None if none does."""
    if key.startswith(BACKBONE_PREFIX):
        return 'RMT backbone'
    for name, pattern in UPSTREAM_HEAD_LAYOUT.items():
        if re.fullmatch(pattern, key):
            return name
    return None


def unused_output_norms(state_dict: StateDict, emitted_stages: Sequence[int]) -> Dict[str, str]:
    dropped = {}
    for key in state_dict:
        match = _OUTPUT_NORM.fullmatch(key)
        if match and int(match.group(1)) not in emitted_stages:
            dropped[key] = (f'the upstream RMT builds an output norm for every stage; this model emits '
                            f'stages {tuple(emitted_stages)} only, so stage {match.group(1)}\'s norm '
                            'took part in no forward pass')
    return dropped


def class_count_hint(key: str) -> str:
    """For a last layer whose size is the class count, the setting that decides it."""
    if key.rsplit('.', 2)[-2] in _CLASS_LAYERS:
        return ' (another class count: set num_classes in the config)'
    return ''


def convert_upstream_trained(state_dict: StateDict, model_specs: Mapping[str, TensorSpec],
                             emitted_stages: Sequence[int]) -> Conversion:
    """Bring an upstream mmdet 2.x / mmseg 0.x RMT model to the target's keys.

    Args:
        state_dict (dict): The file's weights (unwrapped from ``state_dict``).
        model_specs (Mapping[str, TensorSpec]): Key -> shape and dtype of
            the target model's state dict (mmdet 3.x detector or mmseg 1.x segmentor).
        emitted_stages (Sequence[int]): The target backbone's ``out_indices``.

    Returns:
        Conversion: The weights, covering every key of the target exactly,
        and the dropped keys with the reason for each.

    Raises:
        ValueError: A key belongs to no upstream module; or the file does not
            fit the target (keys it lacks or has beyond it, shapes that
            differ: another model, variant or class count).
    """
    unknown = [key for key in state_dict if upstream_module(key) is None]
    if unknown:
        raise ValueError(f'{len(unknown)} keys belong to no module of the upstream RMT detectors and '
                         f'segmentors ({first_few(unknown)}); is this a file of another model?')
    dropped = unused_output_norms(state_dict, emitted_stages)
    kept = {key: value for key, value in state_dict.items() if key not in dropped}
    problems = fit_problems(model_specs, specs(kept), owner_of=upstream_module, shape_hint=class_count_hint)
    if problems:
        raise ValueError(f'the file does not fit the config\'s model: {"; ".join(problems)}. '
                         'Choose the config of the same model, variant and dataset.')
    return Conversion(kept, dropped)


def check_class_names(file_classes: Optional[Sequence[str]],
                      config_classes: Optional[Sequence[str]]) -> None:
    """Fail when the file's ``meta['CLASSES']`` and the config's dataset
    classes (when both are known) differ in names or order.

    The class order fixes what each output channel of the classifiers means;
    a file trained on another order would be evaluated against wrong labels.
    """
    if not file_classes or not config_classes or tuple(file_classes) == tuple(config_classes):
        return
    differ = next((i for i, (a, b) in enumerate(zip(file_classes, config_classes)) if a != b),
                  min(len(file_classes), len(config_classes)))
    raise ValueError(f'the file was trained on {len(file_classes)} classes, the config\'s dataset has '
                     f'{len(config_classes)}; they first differ at index {differ} '
                     f'({list(file_classes[differ:differ + 1])} vs {list(config_classes[differ:differ + 1])}). '
                     'Choose the config of the dataset the file was trained on.')

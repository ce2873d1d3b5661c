"""Convert the RMT authors' trained detector or segmentor to a checkpoint of our config.

Takes one of their mmdet 2.x (RetinaNet, Mask R-CNN, Cascade Mask R-CNN) or
mmseg 0.x (UperNet, Semantic FPN) checkpoints and the matching config of
configs/rmt/; writes the whole model's weights under the config's keys, for
``tools/test.py CONFIG DST`` and ``load_from=DST``. Every key of the file is
accounted for (kept, or dropped with the reason printed), the class names the
file records must be the config dataset's, and the result is proven by a
strict load into the config's model before it replaces DST.

The layouts: every module these models use kept its attribute names and class
conventions (background last in ``fc_cls``, anchors ratio-major, the datasets'
class order) in mmdet 3.3 / mmseg 1.2, so the weights keep their keys. The one
difference: the upstream RMT has an output LayerNorm
(``backbone.extra_norms.<i>``) for all four stages, mmrmt only for its
``out_indices`` (RetinaNet's stage-1 norm took part in no forward pass and is
dropped). Every key must belong to a module of :data:`UPSTREAM_HEAD_LAYOUT`
and fit the target.

Example::

    python tools/model_converters/rmt_upstream_trained_to_mmrmt.py retinanet_t_1x.pth \\
        checkpoints/retinanet_rmt-t_fpn_1x_coco.pth --config configs/rmt/retinanet_rmt-t_fpn_1x_coco.py
"""
import re
from pathlib import Path
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence

from mmrmt.checkpoint import extract_state_dict, load_model_weights, read_checkpoint, specs
from mmrmt.checkpoint.fit import TensorSpec, first_few, fit_problems
from mmrmt.checkpoint.reading import StateDict
from mmrmt.utils import (build_cpu_model, check_new_file, config_dataset_meta, converter_arguments,
                         file_errors_as_tool_errors, read_config, read_run_checkpoint, run_main, write_checked)

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
    """The weights under the target's keys, and each dropped key with why."""
    state_dict: StateDict
    dropped: Dict[str, str]


def upstream_module(key: str) -> Optional[str]:
    """The upstream module (a name of :data:`UPSTREAM_HEAD_LAYOUT`, or 'RMT backbone') holding ``key``, or None."""
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
        state_dict (dict): The file's weights.
        model_specs (Mapping[str, TensorSpec]): The target model's (mmdet 3.x detector or mmseg 1.x segmentor).
        emitted_stages (Sequence[int]): The target backbone's ``out_indices``.

    Raises:
        ValueError: A key belongs to no upstream module, or the file does not fit the target.
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
    """Fail when the file's ``meta['CLASSES']`` and the config's dataset classes (when both are known) differ in
    names or order (what each output channel of the classifiers means)."""
    if not file_classes or not config_classes or tuple(file_classes) == tuple(config_classes):
        return
    differ = next((i for i, (a, b) in enumerate(zip(file_classes, config_classes)) if a != b),
                  min(len(file_classes), len(config_classes)))
    raise ValueError(f'the file was trained on {len(file_classes)} classes, the config\'s dataset has '
                     f'{len(config_classes)}; they first differ at index {differ} '
                     f'({list(file_classes[differ:differ + 1])} vs {list(config_classes[differ:differ + 1])}). '
                     'Choose the config of the dataset the file was trained on.')


#: The version fields mmcv 1.x training scripts store in ``meta``.
SOURCE_VERSION_KEYS = ('mmdet_version', 'mmseg_version', 'mmcv_version')


def convert(src: str, dst: str, config: str, force: bool = False) -> dict:
    """Convert ``src`` for ``config`` into ``dst``.

    Returns:
        dict: The dropped keys of the file, each with its reason.

    Raises:
        PreflightError: A path problem, found before anything is read; or the
            file is not an upstream RMT model fitting the config.
    """
    cfg = read_config(config)
    check_new_file(dst, 'destination', force, inputs=[('the source', src), ('the config', config)])
    model = build_cpu_model(cfg)
    classes = config_dataset_meta(cfg).get('classes')
    with file_errors_as_tool_errors():
        checkpoint = read_run_checkpoint(src, 'source', remote_ok=False)
        file_meta = checkpoint.get('meta') or {}
        conversion = convert_upstream_trained(extract_state_dict(checkpoint, src), specs(model.state_dict()),
                                              model.backbone.out_indices)
        check_class_names(file_meta.get('CLASSES'), classes)

    meta = dict(converted_from=str(src), config=Path(config).name,
                **{key: file_meta[key] for key in SOURCE_VERSION_KEYS if key in file_meta})
    if classes is not None:
        meta['dataset_meta'] = dict(classes=tuple(classes))

    write_checked(dict(meta=meta, state_dict=conversion.state_dict), src, dst,
                  lambda written: load_model_weights(model, read_checkpoint(written), written))
    print(f'{src} -> {dst}: {len(conversion.state_dict)} tensors for {Path(config).name}')
    for key, reason in conversion.dropped.items():
        print(f'  dropped {key}: {reason}')
    return conversion.dropped


def main(argv: Optional[List[str]] = None) -> None:
    parser = converter_arguments(__doc__.split('\n')[0])
    parser.add_argument('--config', required=True, help='our config of the same model (configs/rmt/...)')
    args = parser.parse_args(argv)
    convert(args.src, args.dst, args.config, args.force)


if __name__ == '__main__':
    run_main(main)

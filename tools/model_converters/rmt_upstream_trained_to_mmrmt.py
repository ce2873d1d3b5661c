"""Convert the RMT authors' trained detector or segmentor to a checkpoint of our config.

Takes one of their mmdet 2.x (RetinaNet, Mask R-CNN, Cascade Mask R-CNN) or
mmseg 0.x (UperNet, Semantic FPN) checkpoints and the matching config of
configs/rmt/; writes the whole model's weights under the config's keys, for
``tools/test.py CONFIG DST`` and ``load_from=DST``. Every key of the file is
accounted for (kept, or dropped with the reason printed), the class names the
file records must be the config dataset's, and the result is proven by a
strict load into the config's model before it replaces DST (see
mmrmt/checkpoint/converters/rmt_trained.py for the layouts).

Example::

    python tools/model_converters/rmt_upstream_trained_to_mmrmt.py retinanet_t_1x.pth \\
        checkpoints/retinanet_rmt-t_fpn_1x_coco.pth --config configs/rmt/retinanet_rmt-t_fpn_1x_coco.py
"""
from pathlib import Path
from typing import List, Optional

from mmrmt.checkpoint import extract_state_dict, load_model_weights, read_checkpoint, specs
from mmrmt.checkpoint.converters import check_class_names, convert_upstream_trained
from mmrmt.utils import (build_cpu_model, check_new_file, config_dataset_meta, converter_arguments,
                         file_errors_as_tool_errors, read_config, run_main, write_checked)

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
        checkpoint = read_checkpoint(src)
        file_meta = checkpoint.get('meta') or {}
        conversion = convert_upstream_trained(extract_state_dict(checkpoint, src), specs(model.state_dict()),
                                              model.backbone.out_indices)
        check_class_names(file_meta.get('CLASSES'), classes)

    meta = dict(converted_from=str(src), config=Path(config).name,
                **{key: file_meta[key] for key in SOURCE_VERSION_KEYS if key in file_meta})
    if classes is not None:
        meta['dataset_meta'] = dict(classes=tuple(classes))

    def load_strictly(written: str) -> None:
        """What replaces dst must load back strictly (weights-only) into the config's model."""
        load_model_weights(model, written)

    write_checked(dict(meta=meta, state_dict=conversion.state_dict), dst, load_strictly)
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

"""Convert an upstream RMT checkpoint to a backbone file that mmrmt's configs load.

Takes the authors' ImageNet classifier file, or one of their mmdet 2.x
detection / mmseg 0.x segmentation checkpoints (backbone under
``backbone.``, with its trained output norms), or a checkpoint mmrmt's
tools/train.py wrote; writes the backbone's weights alone, checked by loading
them into the detected RMT variant. An existing destination is replaced only
with ``--force``, and only once the result has loaded.

Examples (the backbone of a Mask R-CNN, then of an UperNet)::

    python tools/model_converters/rmt_to_mmrmt.py maskrcnn_rmt_s_3x.pth \\
        checkpoints/rmt-s_coco-mask-rcnn-3x.pth
    python tools/model_converters/rmt_to_mmrmt.py upernet_rmt_s_160k.pth checkpoints/rmt-s_ade20k-upernet.pth
"""
from mmrmt.models.backbones import RMT
from mmrmt.utils import backbone_converter_main, run_main

main = backbone_converter_main(RMT, __doc__)

if __name__ == '__main__':
    run_main(main)

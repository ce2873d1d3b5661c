"""Convert a ResT detectron2 detector checkpoint to a backbone file mmrmt loads.

The authors trained their COCO detectors with detectron2, whose backbone
keys are ``backbone.bottom_up.*`` with output norms ``norm1``-``norm3``;
this writes the ResT backbone's weights under mmrmt's keys, checked by
loading them into the detected ResT variant. It also takes the backbone out
of a checkpoint mmrmt's tools/train.py wrote. (ImageNet classifier files need
no conversion: configs load them as they are.) An existing destination is
replaced only with ``--force``, and only once the result has loaded.

Example::

    python tools/model_converters/rest_detectron2_to_mmrmt.py mask_rcnn_rest_small.pth \\
        checkpoints/rest-small_coco-mask-rcnn-1x.pth
"""
from mmrmt.models.backbones import ResT
from mmrmt.utils import backbone_converter_main, run_main

main = backbone_converter_main(ResT, __doc__)

if __name__ == '__main__':
    run_main(main)

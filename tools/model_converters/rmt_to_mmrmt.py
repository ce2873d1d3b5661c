"""Convert an upstream RMT checkpoint to a backbone file that mmrmt's configs load.

Takes the authors' ImageNet classifier file, or one of their mmdet 2.x
detection / mmseg 0.x segmentation checkpoints (backbone under
``backbone.``, with its trained output norms), or a checkpoint mmrmt's
tools/train.py wrote; writes the backbone's weights alone, checked by loading
them into the detected RMT variant. An existing destination is replaced only
with ``--force``, and only once the result has loaded.

Example::

    python tools/model_converters/rmt_to_mmrmt.py maskrcnn_rmt_s_3x.pth \\
        checkpoints/rmt-s_coco-mask-rcnn-3x.pth
"""
from typing import List, Optional

from mmrmt.checkpoint.converters import rmt_upstream_to_mmrmt, rmt_widths_depths
from mmrmt.models.backbones import RMT
from mmrmt.utils import run_backbone_converter, run_main


def main(argv: Optional[List[str]] = None) -> None:
    run_backbone_converter(__doc__.split('\n')[0], argv, RMT, rmt_upstream_to_mmrmt, rmt_widths_depths)


if __name__ == '__main__':
    run_main(main)

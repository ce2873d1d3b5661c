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
import sys
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).parent))
from convert_common import run_converter  # noqa: E402

from mmrmt.models.backbones import RMT  # noqa: E402
from mmrmt.models.backbones.rmt_converter import rmt_arch, rmt_upstream_to_mmrmt  # noqa: E402


def main(argv: Optional[List[str]] = None) -> None:
    run_converter(__doc__.split('\n')[0], argv, RMT, rmt_upstream_to_mmrmt, rmt_arch)


if __name__ == '__main__':
    main()

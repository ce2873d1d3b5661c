"""Test-time augmentation models (``tools/test.py --tta``), in mmrmt's own ``MODELS``:
configs name them ``mmrmt.<name>``, which imports this package (it needs mmdet)."""
from .instance_seg_tta import InstanceSegTTAModel

__all__ = ['InstanceSegTTAModel']

"""Test-time augmentation models (``tools/test.py --tta``)."""
from .instance_seg_tta import InstanceSegTTAModel

__all__ = ['InstanceSegTTAModel']

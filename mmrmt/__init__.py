"""mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

Importing this package registers every backbone in both mmdet's and mmseg's
``MODELS`` registries.
"""
from .version import __version__
from . import models  # noqa: F401  (registers the backbones)

__all__ = ['__version__']

"""The one place where mmrmt's modules enter OpenMMLab registries.

Backbones are registered into both MMDetection's and MMSegmentation's
``MODELS`` so that a config of either library finds them by ``type`` after
``custom_imports=dict(imports=['mmrmt'])``.
"""
from typing import Type, TypeVar

from mmdet.registry import MODELS as MMDET_MODELS
from mmseg.registry import MODELS as MMSEG_MODELS

ModuleType = TypeVar('ModuleType', bound=type)

TARGET_REGISTRIES = (MMDET_MODELS, MMSEG_MODELS)


def register_backbone(cls: Type) -> Type:
    """Class decorator registering ``cls`` under its name in mmdet and mmseg."""
    for registry in TARGET_REGISTRIES:
        registry.register_module(module=cls)
    return cls

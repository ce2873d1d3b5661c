"""The one place where mmrmt's modules enter OpenMMLab registries.

Backbones are registered into MMDetection's and MMSegmentation's ``MODELS``,
whichever of the two is installed (at least one must be), so that a config of
either library finds them by ``type`` after
``custom_imports=dict(imports=['mmrmt'])``. A library that is installed but
fails to import raises its own error: only an absent one is skipped.

What only some runs use lives in mmrmt's own scope, imported on its first
lookup (as mmdet's registries import ``mmdet.models``): a config names it
``type='mmrmt.InstanceSegTTAModel'``, and mmengine then imports this module,
finds :data:`MODELS` as the ``mmrmt`` child of its own and imports its
``locations``. The runner and hook every mmrmt config uses are registered in
mmengine's ``RUNNERS`` and ``HOOKS`` by importing :mod:`mmrmt.engine`, which
``configs/_base_/mmrmt_runtime.py`` names in ``custom_imports``.
"""
from importlib import import_module
from importlib.util import find_spec
from typing import List, Type

from mmengine.registry import MODELS as MMENGINE_MODELS, Registry

#: The libraries whose ``<library>.registry.MODELS`` receive the backbones.
TARGET_LIBRARIES = ('mmdet', 'mmseg')


def installed_model_registries() -> List[Registry]:
    """``MODELS`` of each library in :data:`TARGET_LIBRARIES` that is installed.

    Raises:
        ImportError: Neither library is installed.
    """
    registries = [import_module(f'{library}.registry').MODELS
                  for library in TARGET_LIBRARIES if find_spec(library) is not None]
    if not registries:
        raise ImportError('mmrmt needs MMDetection or MMSegmentation: pip install "mmdet>=3.3,<3.4" or '
                          '"mmsegmentation>=1.2.2,<1.3" ftfy regex (or reinstall mmrmt with its det, seg or all '
                          'extra)')
    return registries


TARGET_REGISTRIES = installed_model_registries()

#: mmrmt's models that need mmdet and only some runs use (the TTA model of ``--tta``).
MODELS = Registry('model', parent=MMENGINE_MODELS, scope='mmrmt', locations=['mmrmt.models.test_time_augs'])


def register_backbone(cls: Type) -> Type:
    """Class decorator registering ``cls`` under its name in every target registry."""
    for registry in TARGET_REGISTRIES:
        registry.register_module(module=cls)
    return cls

"""mmrmt's own scope in mmengine's ``MODELS``, for what only some runs use.

A config names such a model ``type='mmrmt.InstanceSegTTAModel'``; mmengine
then imports this module, finds :data:`MODELS` as the ``mmrmt`` child of its
own and imports its ``locations`` (as mmdet's registries import
``mmdet.models``). The core's models are registered in mmdet's and mmseg's
``MODELS`` by :mod:`mmrmt.openmmlab_layer`; the runner and hook every mmrmt
config uses in mmengine's ``RUNNERS`` and ``HOOKS`` by :mod:`mmrmt.engine`,
which ``configs/_base_/mmrmt_runtime.py`` names in ``custom_imports``.
"""
from mmengine.registry import MODELS as MMENGINE_MODELS, Registry

#: mmrmt's models that need mmdet and only some runs use (the TTA model of ``--tta``).
MODELS = Registry('model', parent=MMENGINE_MODELS, scope='mmrmt', locations=['mmrmt.models.test_time_augs'])

"""mmrmt's own scope in mmengine's registries, for what only some runs use.

A config names such a class with the scope, e.g. ``runner_type='mmrmt.OwnWorkDirRunner'`` or
``type='mmrmt.InstanceSegTTAModel'``; from any default scope (mmdet's, mmseg's) mmengine then imports this
module, finds the ``mmrmt`` child of its own registry and imports the child's ``locations`` (as mmdet's
registries import ``mmdet.models``), so ``custom_imports=dict(imports=['mmrmt'])`` is all a config needs.
The core's models are registered in mmdet's and mmseg's ``MODELS`` by :mod:`mmrmt.openmmlab_layer`.
"""
from mmengine.registry import HOOKS as MMENGINE_HOOKS, MODELS as MMENGINE_MODELS, RUNNERS as MMENGINE_RUNNERS, Registry

#: mmrmt's models that need mmdet and only some runs use (the TTA model of ``--tta``).
MODELS = Registry('model', parent=MMENGINE_MODELS, scope='mmrmt', locations=['mmrmt.models.test_time_augs'])
#: The runner of mmrmt's configs (:mod:`mmrmt.engine`, which loads mmcv's ops: imported on the first lookup).
RUNNERS = Registry('runner', parent=MMENGINE_RUNNERS, scope='mmrmt', locations=['mmrmt.engine'])
#: The hooks of mmrmt's configs.
HOOKS = Registry('hook', parent=MMENGINE_HOOKS, scope='mmrmt', locations=['mmrmt.engine'])

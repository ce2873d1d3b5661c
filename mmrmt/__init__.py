"""mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

Importing this package (as a config's ``custom_imports=dict(imports=['mmrmt'])``
does, whatever launcher reads the config):

* registers every backbone in mmdet's and mmseg's ``MODELS`` (whichever is
  installed);
* lets torch's weights-only loading accept mmengine checkpoints (see
  :func:`~mmrmt.checkpoint.allow_mmengine_checkpoints`), so ``--resume`` works
  under torch >= 2.6 without turning the safety off;
* registers the authors' RMT and ResT classifiers as timm models
  (``timm.create_model('rmt_s')``, see :mod:`mmrmt.models.classifiers`);
* lets configs inherit ours as ``_base_ = 'mmrmt::rmt/...py'`` (see
  :mod:`mmrmt.config_bases`).

RMT's Manhattan self-attention, as a module for any network, is
:class:`~mmrmt.models.ManhattanSelfAttention2d`, also importable from here.

It imports neither mmengine's Runner nor anything of the tools' layer
(:mod:`mmrmt.utils`, :mod:`mmrmt.apis`, :mod:`mmrmt.deployment`): the runner
and hook of :mod:`mmrmt.engine` are imported by the configs that name them
(``configs/_base_/mmrmt_runtime.py``), the TTA model on its first lookup (see
:mod:`mmrmt.registry`), the rest by the tools that use them.
"""
from . import models  # noqa: F401  (registers the backbones)
from .checkpoint import allow_mmengine_checkpoints
from .config_bases import enable_mmrmt_bases
from .models import classifiers  # noqa: F401  (registers the timm models)
from .models import ManhattanSelfAttention2d
from .version import __version__

allow_mmengine_checkpoints()
enable_mmrmt_bases()

__all__ = ['ManhattanSelfAttention2d', '__version__']

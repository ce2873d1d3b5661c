"""mmrmt: RMT, ResT and ResMLP backbones for MMDetection and MMSegmentation.

Importing this package (as a config's ``custom_imports=dict(imports=['mmrmt'])``
does, whatever launcher reads the config):

* checks the versions of the mmcv and mmengine it runs on, from upstream
  OpenMMLab or its maintained onedl forks (see :mod:`mmrmt.openmmlab_stack`);
* registers every backbone in mmdet's and mmseg's ``MODELS`` (whichever is
  installed);
* lets torch's weights-only loading accept mmengine checkpoints (see
  :func:`~mmrmt.checkpoint.allow_mmengine_checkpoints`), so ``--resume`` works
  under torch >= 2.6 without turning the safety off;
* registers the authors' RMT and ResT classifiers as timm models
  (``timm.create_model('rmt_s')``, see :mod:`mmrmt.models.classifiers`);
* makes every checkpoint load of mmengine weights-only, on upstream mmengine
  and on onedl-mmengine (whose fallback to ``weights_only=False`` never runs),
  a refused file ending the process in one ``error:`` line (see
  :mod:`mmrmt.checkpoint.strict_mmengine_loading`);
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
from .openmmlab_stack import check_openmmlab_stack

check_openmmlab_stack()

from . import models  # noqa: E402,F401  (registers the backbones)
from .checkpoint import allow_mmengine_checkpoints, print_refusals_in_one_line, strict_when_mmengine_loads  # noqa: E402
from .config_bases import enable_mmrmt_bases  # noqa: E402
from .models import ManhattanSelfAttention2d  # noqa: E402
from .models import classifiers  # noqa: E402,F401  (registers the timm models)
from .version import __version__  # noqa: E402

allow_mmengine_checkpoints()
strict_when_mmengine_loads()
print_refusals_in_one_line()
enable_mmrmt_bases()

__all__ = ['ManhattanSelfAttention2d', '__version__']

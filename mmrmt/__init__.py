"""mmrmt: RMT, ResT and ResMLP backbones for PyTorch, timm, MMDetection and MMSegmentation.

The core needs torch, torchvision and timm only: the backbones
(:class:`~mmrmt.models.RMT`, :class:`~mmrmt.models.ResT`,
:class:`~mmrmt.models.ResMLP`, plain ``nn.Module`` s),
:class:`ManhattanSelfAttention2d` (RMT's attention as a module for any
network), the authors' classifiers as timm models (``import mmrmt`` registers
``rmt_t`` ... ``rest_large`` with ``timm.create_model``, see
:mod:`mmrmt.models.classifiers`) and weight reading (:mod:`mmrmt.checkpoint`).

Where MMDetection or MMSegmentation is installed, importing mmrmt (as a
config's ``custom_imports=dict(imports=['mmrmt'])`` does) also brings the
OpenMMLab layer (:mod:`mmrmt.openmmlab_layer`): it registers the backbones in
their ``MODELS`` and ``mmrmt::`` config bases, applies the fixes of named
upstream bugs listed in :mod:`mmrmt.upstream_fixes` and, in a process that
has imported mmdeploy, registers mmrmt's rewriters for it; nothing else in
the process changes.
"""
from . import models  # noqa: F401
from .models import classifiers  # noqa: F401  (registers the timm models)
from .models import ManhattanSelfAttention2d
from .openmmlab_stack import installed_libraries
from .version import __version__

if installed_libraries():
    from . import openmmlab_layer  # noqa: F401

__all__ = ['ManhattanSelfAttention2d', '__version__']

"""The authors' RMT and ResT ImageNet classifiers as timm models.

Importing it (``import mmrmt`` does) registers ``rmt_t``, ``rmt_s``,
``rmt_b``, ``rmt_l``, the token-labelled ``rmt_s_tl``, ``rmt_b_tl``,
``rmt_l_tl`` and ``rest_lite``, ``rest_small``, ``rest_base``,
``rest_large`` with ``timm.create_model`` (see docs/timm.md).
"""
from .rest import ResTClassifier
from .rmt import RMTClassifier

__all__ = ['RMTClassifier', 'ResTClassifier']

from importlib.util import find_spec

from .backbones import *  # noqa: F401,F403

if find_spec('mmdet') is not None:  # the TTA model extends mmdet's
    from . import test_time_augs  # noqa: F401  (registers InstanceSegTTAModel)

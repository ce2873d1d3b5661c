"""The backbones (registered on import) and, imported only when a config names
``mmrmt.InstanceSegTTAModel``, the test-time augmentation model (see
:mod:`mmrmt.registry`)."""
from .backbones import *  # noqa: F401,F403

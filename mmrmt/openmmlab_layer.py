"""The OpenMMLab layer of ``import mmrmt``, where MMDetection or MMSegmentation is installed.

It checks the versions of mmcv and mmengine (:mod:`.openmmlab_stack`), then
does what a plugin does: registers the core's models in the ``MODELS`` of
mmdet and of mmseg, each where installed, so that a config of either finds
them by ``type`` after ``custom_imports=dict(imports=['mmrmt'])``; lets
configs inherit ``mmrmt::`` bases (:mod:`.config_bases`); and sends the
core's log (logger ``mmrmt``) to mmengine's current logger. The only other
changes are the fixes of named upstream bugs in :mod:`.upstream_fixes`, and,
in a process that has imported mmdeploy (its ``tools/deploy.py`` reading a
config's ``custom_imports``), mmrmt's rewriters for it
(:mod:`mmrmt.deployment.mmdeploy`), with which mmdeploy's own route converts
the models right. The
runner and hooks of mmrmt's configs are registered by :mod:`mmrmt.engine`,
which the configs import; the TTA model by :mod:`.registry`.
"""
import logging
import sys
from importlib import import_module

from .openmmlab_stack import check_openmmlab_stack, installed_libraries

check_openmmlab_stack()

from mmengine.logging import print_log  # noqa: E402

from .config_bases import enable_mmrmt_bases  # noqa: E402
from .models import RMT, ManhattanSelfAttention2d, ResMLP, ResT  # noqa: E402
from .upstream_fixes import UPSTREAM_FIXES, apply_upstream_fixes  # noqa: E402

#: The core's modules a config names by ``type``.
CORE_MODELS = (RMT, ResT, ResMLP, ManhattanSelfAttention2d)


class ToMMEngineLogger(logging.Handler):
    """Sends each record of the core's logger to mmengine's current logger (a run's log file)."""

    def emit(self, record: logging.LogRecord) -> None:
        print_log(record.getMessage(), logger='current', level=record.levelno)


def send_core_log_to_mmengine() -> None:
    """Give the logger ``mmrmt`` one :class:`ToMMEngineLogger` (idempotent)."""
    logger = logging.getLogger('mmrmt')
    logger.setLevel(logging.INFO)
    if not any(isinstance(handler, ToMMEngineLogger) for handler in logger.handlers):
        logger.addHandler(ToMMEngineLogger())
    logger.propagate = False


for library in installed_libraries():  # a library installed but failing to import raises its own error
    for model in CORE_MODELS:
        import_module(f'{library}.registry').MODELS.register_module(module=model)
enable_mmrmt_bases()
send_core_log_to_mmengine()
apply_upstream_fixes(*UPSTREAM_FIXES)
if 'mmdeploy' in sys.modules:
    import_module('mmrmt.deployment.mmdeploy')

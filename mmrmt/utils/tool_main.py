"""How every tool of tools/ and demo/ ends with an error: one line, exit status 1."""
import sys
import warnings
from typing import Callable

from mmrmt.checkpoint import CheckpointRefusedError
from mmrmt.run_claim import ClaimError
from .preflight import PreflightError


def run_main(main: Callable[[], object]) -> None:
    """Run a tool's ``main()``; a :class:`PreflightError`, a refused checkpoint
    (:class:`~mmrmt.checkpoint.CheckpointRefusedError`, wherever the run reads it) or a work dir
    or output another run holds (:class:`~mmrmt.run_claim.ClaimError`) ends the process with
    ``error: <message>`` on stderr (one line) and exit status 1.

    Any other exception is a bug and keeps its traceback. Tests call
    ``main(argv)`` directly and see the :class:`PreflightError` itself.

    Example:
        >>> if __name__ == '__main__':
        ...     run_main(main)
    """
    # setuptools' deprecation notice, which mmengine's imports trigger, is no news to the user
    warnings.filterwarnings('ignore', message='pkg_resources is deprecated')
    try:
        main()
    except (PreflightError, CheckpointRefusedError, ClaimError) as error:
        sys.exit(f'error: {error}')

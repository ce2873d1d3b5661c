"""OpenVINO tests under a kernel set OpenVINO cannot compile our graphs in.

Under ``ONEDNN_MAX_CPU_ISA=SSE41`` (``make test`` under that kernel set, see
``OPENVINO_UNCOMPILABLE_ISAS`` in mmrmt/deployment/runtime/graph_session.py) every tool and
:func:`~mmrmt.deployment.runtime.open_graph` refuse ``--runtime openvino`` in one line
before building anything. There an OpenVINO test checks that refusal, which
is what a user of that kernel set gets; everywhere else, what OpenVINO computes.
"""
import re
import subprocess
from typing import Callable, Optional

import pytest

from mmrmt.deployment.runtime import RuntimeChoiceError, check_runtime


def openvino_refusal() -> Optional[str]:
    """The line OpenVINO is refused with in this environment; None where it runs."""
    try:
        check_runtime('openvino')
    except RuntimeChoiceError as error:
        return str(error)
    return None


def refused_in_process(call: Callable[[], object]) -> bool:
    """Where OpenVINO is refused, ``call()`` (which runs something in OpenVINO)
    raises exactly that refusal: True, the test is done. Elsewhere False."""
    refusal = openvino_refusal()
    if refusal is None:
        return False
    with pytest.raises(RuntimeChoiceError, match=f'^{re.escape(refusal)}$'):
        call()
    return True


def refused_by_the_tool(result: subprocess.CompletedProcess) -> bool:
    """Where OpenVINO is refused, the tool run (given ``--runtime openvino``)
    ended with status 1 and that one ``error:`` line: True. Elsewhere False."""
    refusal = openvino_refusal()
    if refusal is None:
        return False
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == f'error: {refusal}', (
        result.stdout[-2000:] + result.stderr[-2000:])
    assert 'Traceback' not in result.stderr
    return True

"""The scripts of tools/ and demo/ as modules, imported by their path (they are
scripts, not a package), to call their functions and ``main(argv)`` in-process."""
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Sequence

import pytest

from mmrmt.utils import run_main

REPO = Path(__file__).resolve().parents[2]


def import_tool(path: str) -> ModuleType:
    """The script at ``path`` (relative to the repository, e.g.
    ``'tools/analysis_tools/get_flops.py'``), imported once per test session."""
    name = 'tool_' + Path(path).stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def exit_line(main: Callable[[list], object], args: Sequence[object]) -> str:
    """Run a tool's ``main(args)`` as its script does (through ``run_main``);
    return the one line it exits with, which must be its only line."""
    with pytest.raises(SystemExit) as exited:
        run_main(lambda: main([str(arg) for arg in args]))
    assert isinstance(exited.value.code, str) and '\n' not in exited.value.code
    return exited.value.code

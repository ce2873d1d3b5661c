"""The import direction of docs/design.md: every package imports only from the
layers below it, and ``import mmrmt`` (what configs' custom_imports run)
loads the model layer and nothing of the tools' layer."""
import ast
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / 'mmrmt'
#: Each package's layer, bottom up (docs/design.md); ``mmrmt/__init__.py`` is the face and may import any.
LAYERS = dict(version=0, registry=0, config_bases=0, checkpoint=0, models=1, engine=2, datasets=2, utils=3, apis=4, deployment=4)
TOOL_LAYER = ('mmrmt.utils', 'mmrmt.apis', 'mmrmt.deployment', 'mmrmt.datasets')


def imported_packages(path: Path) -> Iterator[str]:
    """The mmrmt packages (``models``, ``utils``...) ``path`` imports, absolutely or relatively."""
    own = path.relative_to(PACKAGE.parent).with_suffix('').parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(own[:len(own) - node.level]) if node.level else []
            names = ['.'.join(base + ([node.module] if node.module else []))]
        else:
            continue
        for name in names:
            parts = name.split('.')
            if parts[0] == 'mmrmt' and len(parts) > 1:
                yield parts[1]


@pytest.mark.parametrize('path', sorted(path for path in PACKAGE.rglob('*.py') if path.parent != PACKAGE),
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_point_down(path):
    own = path.relative_to(PACKAGE).parts[0]
    upward = {package for package in imported_packages(path)
              if package != own and LAYERS[package] >= LAYERS[own]}
    assert not upward, f'{path.relative_to(PACKAGE)} ({own}) imports {sorted(upward)}, not below it'


def test_import_mmrmt_registers_the_models_and_nothing_of_the_tools():
    code = ('import sys, mmrmt, torch\n'
            'from mmengine.registry import HOOKS\n'
            'from mmrmt.checkpoint import CHECKPOINT_SAFE_GLOBALS\n'
            f'print(sorted(name for name in sys.modules if name.startswith({TOOL_LAYER!r})))\n'
            "print(HOOKS.get('ResumeRNGHook') is not None)\n"
            'print(all(entry in torch.serialization.get_safe_globals() for entry in CHECKPOINT_SAFE_GLOBALS))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split('\n')[:3] == ['[]', 'True', 'True']

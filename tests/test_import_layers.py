"""The import direction of docs/design.md: every package imports only from the
layers below it, and ``import mmrmt`` (what configs' custom_imports run)
loads the model layer and neither mmrmt's engine nor the tools' layer; and
nothing a wheel ships (mmrmt/, tools/, demo/) reaches into tests/."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'mmrmt'
#: Each package's layer, bottom up (docs/design.md); ``mmrmt/__init__.py`` is the face and may import any.
LAYERS = dict(version=0, registry=0, config_bases=0, atomic_file=0, run_claim=0, cpu_features=0, openmmlab_stack=0,
              checkpoint=0, amp=1, models=2, upstream_fixes=2, engine=3, datasets=3, utils=4, apis=5, deployment=5,
              benchmark=6)
TOOL_LAYER = ('mmrmt.utils', 'mmrmt.apis', 'mmrmt.deployment', 'mmrmt.datasets', 'mmrmt.benchmark')


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


def module_name(path: Path) -> str:
    """``mmrmt/models/layers/norm.py`` -> ``mmrmt.models.layers.norm`` (a package: its folder's name)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def imported_modules(path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The mmrmt files ``path`` imports anywhere in it (lazy imports in functions too)."""
    own = module_name(path).split('.')
    package = own if path.name == '__init__.py' else own[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = '.'.join((package[:len(package) + 1 - node.level] if node.level else [])
                              + ([node.module] if node.module else []))
            names = [module] + [f'{module}.{alias.name}' for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # ``pkg.module.Class`` -> ``pkg.module``
                name = name.rpartition('.')[0]
            if name:
                found.add(name)
    return found - {'.'.join(own)}


def test_no_import_circle_between_files():
    modules = {module_name(path): path for path in PACKAGE.rglob('*.py')}
    graph = {name: imported_modules(path, modules) for name, path in modules.items()}
    for name, imports in graph.items():  # a file importing a package above it closes a circle through its __init__
        above = sorted(other for other in imports if name.startswith(other + '.'))
        assert not above, f'{name} imports {above}, a package that holds it'
    done: Set[str] = set()

    def visit(name: str, trail: List[str]) -> None:
        for other in sorted(graph[name]):
            assert other not in trail, 'import circle: ' + ' -> '.join(trail[trail.index(other):] + [other])
            if other not in done:
                visit(other, trail + [other])
        done.add(name)

    for name in sorted(graph):
        visit(name, [name])


#: Run in a fresh process: what ``import mmrmt`` loads and registers, then what reading
#: a config that inherits configs/_base_/mmrmt_runtime.py adds, then a TTA lookup.
IMPORT_SCRIPT = f'''
import json, sys
import torch
import mmrmt
from mmengine.registry import HOOKS, MODELS, RUNNERS

def loaded(*prefixes):
    return sorted(name for name in sys.modules if name.startswith(prefixes))

def registered(module):
    return {{library: sorted(name for name in ('RMT', 'ResT', 'ResMLP', 'ManhattanSelfAttention2d')
                             if __import__(library + '.registry', fromlist=['MODELS']).MODELS.get(name) is module[name])
            for library in ('mmdet', 'mmseg')}}

report = dict(engine=loaded('mmrmt.engine'), tools=loaded{TOOL_LAYER!r},
              mmdet_models=loaded('mmdet.models'), backbones=registered(vars(mmrmt.models)),
              hook_before_config=HOOKS.get('ResumeRNGHook') is not None)
from mmengine.config import Config
Config.fromfile(sys.argv[1])
report['engine_after_config'] = loaded('mmrmt.engine')  # the configs' scoped names import it when looked up
report.update(hook=HOOKS.get('mmrmt.ResumeRNGHook').__module__,
              runner_class=RUNNERS.get('mmrmt.OwnWorkDirRunner').__module__)
from mmdet.registry import MODELS as MMDET_MODELS
report['tta'] = MMDET_MODELS.get('mmrmt.InstanceSegTTAModel').__module__
print(json.dumps(report))
'''


@pytest.fixture(scope='module')
def import_report() -> dict:
    """What a fresh process loads and registers through ``import mmrmt`` and a config."""
    runtime = PACKAGE.parent / 'configs' / '_base_' / 'mmrmt_runtime.py'
    result = subprocess.run([sys.executable, '-c', IMPORT_SCRIPT, str(runtime)], capture_output=True,
                            text=True, timeout=300, cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_import_mmrmt_loads_neither_the_engine_nor_the_tools(import_report):
    assert import_report['engine'] == []
    assert import_report['tools'] == []
    assert import_report['mmdet_models'] == []  # the TTA model, which extends mmdet's, is not imported
    assert not import_report['hook_before_config']


def test_import_mmrmt_registers_the_backbones(import_report):
    every = sorted(['ManhattanSelfAttention2d', 'ResMLP', 'ResT', 'RMT'])
    assert import_report['backbones'] == dict(mmdet=every, mmseg=every)


def test_mmrmt_configs_register_the_runner_and_hook_they_name(import_report):
    assert import_report['engine_after_config'] == []
    assert import_report['hook'] == 'mmrmt.engine.resume_rng_hook'
    assert import_report['runner_class'] == 'mmrmt.engine.own_work_dir_runner'


def test_the_scoped_tta_model_is_imported_on_its_first_lookup(import_report):
    assert import_report['tta'] == 'mmrmt.models.test_time_augs.instance_seg_tta'


#: What a wheel ships and runs: the package, the tools and the demo (the wheel has no tests/).
SHIPPED = ('mmrmt', 'tools', 'demo')
#: Module names only the tests' own folders provide.
TEST_MODULES = ('tests', 'helpers', 'tool_process', 'conftest')
#: A path or module name through the tests' folder: 'tests', 'tests/helpers', '../tests', 'tests.helpers'.
TESTS_PATH = re.compile(r'(^|[/\\.])tests([/\\.]|$)')


def non_docstring_strings(tree: ast.AST) -> Iterator[str]:
    """The string constants of ``tree`` that are not the docstring of a module, class or function."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def references_to_tests(path: Path) -> List[str]:
    """The imports of the tests' modules in ``path`` and its strings naming the tests' folder."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split('.')[0] in TEST_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split('.')[0] in TEST_MODULES:
            found.append(node.module)
    return found + [text for text in non_docstring_strings(tree) if TESTS_PATH.search(text)]


@pytest.mark.parametrize('path', sorted(path for folder in SHIPPED for path in (ROOT / folder).rglob('*.py')),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_shipped_code_neither_imports_nor_loads_the_tests(path):
    """An installed wheel has no tests/: nothing it runs may import from there or load a file by its path."""
    assert not references_to_tests(path), f'{path.relative_to(ROOT)} reaches into the tests: ' \
                                          f'{references_to_tests(path)}'


DEPLOYMENT = PACKAGE / 'deployment'
#: mmrmt.deployment's sub-packages, each of which names its API in its ``__init__`` (its face).
DEPLOYMENT_FACES = tuple(f'mmrmt.deployment.{path.parent.name}' for path in sorted(DEPLOYMENT.glob('*/__init__.py')))
#: The deployment sub-packages each one may import (its modules, directly): the export is the bottom.
DEPLOYMENT_BELOW = dict(export=set(), runtime={'export'}, int8={'export', 'runtime'}, mmdeploy={'export'})
#: ``from mmrmt.deployment... import`` / ``import mmrmt.deployment...`` in a shell script's Python.
SHELL_IMPORT = re.compile(r'(?:from|import)\s+(mmrmt\.deployment[\w.]*)')


def test_the_deployment_sub_packages_are_the_four_of_docs_design():
    assert DEPLOYMENT_FACES == tuple(f'mmrmt.deployment.{name}' for name in sorted(DEPLOYMENT_BELOW))


def deployment_imports(path: Path) -> List[str]:
    """The ``mmrmt.deployment...`` modules ``path`` (Python, or a shell script's Python lines) imports."""
    if path.suffix == '.sh':
        return SHELL_IMPORT.findall(path.read_text())
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.append(node.module)
    return [name for name in found if name == 'mmrmt.deployment' or name.startswith('mmrmt.deployment.')]


@pytest.mark.parametrize('path', sorted(path for folder in ('tools', 'demo') for pattern in ('*.py', '*.sh')
                                        for path in (ROOT / folder).rglob(pattern)),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_tools_import_deployment_only_from_its_faces(path):
    """A tool imports ``mmrmt.deployment.export`` (runtime, int8, mmdeploy), never a module inside one."""
    past = [name for name in deployment_imports(path) if name not in DEPLOYMENT_FACES]
    assert not past, f'{path.relative_to(ROOT)} imports {past}: import from one of {DEPLOYMENT_FACES}'


def deployment_sub_packages(path: Path) -> Set[str]:
    """The deployment sub-packages (``export``, ``runtime``...) a file under mmrmt/deployment/ imports."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            used.add(node.module.split('.')[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.startswith('mmrmt.deployment.'):
            used.add(node.module.split('.')[2])
    return used


def imports_mmdeploy(path: Path) -> bool:
    """Whether ``path`` imports the mmdeploy library (absolutely: ``import mmdeploy``, ``from mmdeploy.x``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(name.split('.')[0] == 'mmdeploy' for name in names):
            return True
    return False


@pytest.mark.parametrize('path', sorted(path for path in DEPLOYMENT.rglob('*.py') if path.parent != DEPLOYMENT),
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_deployment_sub_packages_import_only_those_below_them(path):
    own = path.relative_to(DEPLOYMENT).parts[0]
    others = deployment_sub_packages(path) - {own}
    assert others <= DEPLOYMENT_BELOW[own], f'{path.relative_to(PACKAGE)} ({own}) imports {sorted(others)}'


def test_only_the_mmdeploy_sub_package_imports_mmdeploy():
    """mmdeploy is optional: the boundary of mmrmt.deployment.mmdeploy is where it is imported."""
    importers = [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob('*.py')) if imports_mmdeploy(path)]
    assert importers and all(name.startswith('deployment/mmdeploy/') for name in importers), importers

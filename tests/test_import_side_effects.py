"""``import mmrmt`` registers and applies the upstream fixes of mmrmt.upstream_fixes; it changes no other
attribute of ``sys``, torch, mmengine, mmdet or mmseg (a snapshot of every loaded module's attributes, and
of their classes', before and after the import, in a fresh process)."""
import json
import subprocess
import sys

import pytest

SNAPSHOT_SCRIPT = '''
import json, sys
import torch, torch._dynamo, torch.onnx.symbolic_helper  # torch changes itself as these load
import mmengine.runner, mmengine.config, mmdet.registry, mmseg.registry

WATCHED = ('torch', 'mmengine', 'mmdet', 'mmseg')


def snapshot():
    state = {'sys.meta_path': repr(sys.meta_path), 'sys.path_hooks': repr(sys.path_hooks),
             'sys.path': repr(sys.path), 'torch safe globals': repr(torch.serialization.get_safe_globals())}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == 'sys' or name.startswith(WATCHED)):
            continue
        for attribute, value in list(vars(module).items()):
            state[f'{name}.{attribute}'] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for class_attribute, class_value in list(vars(value).items()):
                    state[f'{name}.{attribute}.{class_attribute}'] = id(class_value)
    return state


before = snapshot()
import mmrmt
after = snapshot()
print(json.dumps(sorted(key for key, value in before.items() if after.get(key) != value)))
'''

#: What the fixes of mmrmt.upstream_fixes applied by ``import mmrmt`` replace, where the running
#: mmengine has it (the mmrmt:: bases and the cached package bases share Config._get_cfg_path;
#: registering a loader makes CheckpointLoader a new dict of its schemes).
REPLACED_BY_FIXES = {'mmengine.config.config.Config._get_cfg_path', 'mmengine.runner.checkpoint._safe_torch_load',
                     'mmengine.runner.checkpoint.CheckpointLoader._schemes', 'mmengine.runner.runner.Runner.from_cfg'}


@pytest.mark.slow  # a fresh process
def test_import_mmrmt_changes_nothing_but_registries_and_the_listed_fixes():
    result = subprocess.run([sys.executable, '-c', SNAPSHOT_SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    changed = set(json.loads(result.stdout.splitlines()[-1]))
    assert changed <= REPLACED_BY_FIXES
    assert 'mmengine.config.config.Config._get_cfg_path' in changed  # the snapshot sees what changes

"""The preloaded interpreter most tool tests run through (tool_process.run_script)
gives a script what a fresh ``python SCRIPT ARGS`` gives it: the same output,
exit status, arguments, paths, environment and a random state of its own; mmrmt
not yet imported; timeouts and signals reported as :mod:`subprocess` does."""
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tool_process import REPO, run_script

PROBE = '''
import atexit, json, os, random, sys
import torch
atexit.register(lambda: print('atexit ran'))
print(json.dumps(dict(
    argv=sys.argv, path0=sys.path[0], name=__name__, cwd=os.getcwd(), threads=os.environ['OMP_NUM_THREADS'],
    mmrmt_imported='mmrmt' in sys.modules, torch_draw=torch.rand(3).tolist(), python_draw=random.random())))
print('to stderr', file=sys.stderr)
'''


def probe(tmp_path: Path, body: str) -> Path:
    script = tmp_path / 'probe.py'
    script.write_text(textwrap.dedent(body))
    return script


def both_ways(script: Path, args=()) -> tuple:
    return run_script(script, args), run_script(script, args, fresh=True)


def test_a_script_sees_what_a_fresh_interpreter_gives_it(tmp_path):
    script = probe(tmp_path, PROBE)
    (forked, fresh), again = both_ways(script, ['a b', '--x=1']), run_script(script, ['a b', '--x=1'])
    for result in forked, fresh:
        assert result.returncode == 0 and result.stderr == 'to stderr\n', result.stderr
        assert result.stdout.endswith('\natexit ran\n')
    seen = [json.loads(result.stdout.splitlines()[0]) for result in (forked, fresh, again)]
    assert seen[0]['argv'] == [str(script), 'a b', '--x=1'] and seen[0]['path0'] == str(tmp_path)
    assert seen[0]['name'] == '__main__' and seen[0]['cwd'] == str(REPO)
    assert not seen[0]['mmrmt_imported']
    for generator in 'python_draw', 'torch_draw':
        draws = [str(entry.pop(generator)) for entry in seen]
        assert len(set(draws)) == 3, f'{generator}: the random state is not drawn afresh in every process'
    assert seen[0] == seen[1] == seen[2]


@pytest.mark.parametrize('body,status', [
    ('import sys; sys.exit("error: the one line")', 1),
    ('import sys; sys.exit(3)', 3),
    ('raise ValueError("uncaught")', 1),
    ('import os, signal; os.kill(os.getpid(), signal.SIGTERM)', -15),
])
def test_exit_status_and_messages_equal_a_fresh_interpreter_s(tmp_path, body, status):
    forked, fresh = both_ways(probe(tmp_path, body))
    assert forked.returncode == fresh.returncode == status
    assert forked.stdout == fresh.stdout == ''
    assert forked.stderr == fresh.stderr


def test_a_run_past_its_timeout_is_killed_and_the_next_one_runs(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        run_script(probe(tmp_path, 'print("started", flush=True)\nimport time\ntime.sleep(600)'), [], timeout=2)
    assert run_script(probe(tmp_path, 'print("next")'), []).stdout == 'next\n'

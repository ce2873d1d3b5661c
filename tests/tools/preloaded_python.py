"""An interpreter that has imported the heavy third-party libraries once and
runs each Python script it is sent as ``python SCRIPT ARGS...`` would, in a
child forked from it (so a tool run skips the 5-11 s of CPU that importing
torch, mmdet and mmseg costs).

What a child gets is what a fresh ``python SCRIPT ARGS...`` started with the
same environment and working directory gets: ``sys.argv``, ``sys.path[0]``
the script's folder, ``__main__``, standard streams on the files it is given
(stdin on /dev/null), Python's, numpy's and torch's random state drawn from
the OS (torch seeds itself so in a new process), the exit status Python gives (``SystemExit``'s
code, a message printed, 1 for an uncaught exception, atexit handlers run).
What it does not get: a fresh import of the libraries in :data:`PRELOADED`.
mmrmt is deliberately not among them: our tools and the configs'
``custom_imports`` import it themselves, as they do in a fresh process, so a
guard installed by that import is tested as users get it.

Protocol, one JSON object per line: the client writes ``{"argv": [...],
"cwd": ..., "env": {...}, "stdout": path, "stderr": path, "timeout": seconds}``;
the server answers ``{"returncode": N}`` when the child ends (negative: killed
by that signal, as :mod:`subprocess` reports it; null: killed at its timeout).
What importing the libraries prints to stdout is dropped (onedl-mmdetection
prints a line when its datasets are imported; a child does not repeat it); the
server ends when its stdin closes.
"""
import atexit
import contextlib
import io
import json
import os
import random
import runpy
import select
import signal
import sys
from importlib import import_module
from typing import List

#: Imported once, before any child starts. None of them starts a thread (a
#: child of a process with threads would inherit their locks, not them), which
#: is why onnxruntime and openvino are not among them.
PRELOADED = ('numpy', 'torch', 'torchvision', 'timm', 'mmengine.runner', 'mmcv.ops', 'mmdet.models', 'mmdet.apis',
             'mmdet.datasets', 'mmdet.evaluation', 'mmseg.models', 'mmseg.apis', 'mmseg.datasets',
             'mmseg.evaluation', 'onnx', 'onnxscript', 'torch.onnx', 'torch.export')


def redirect_streams(stdout: str, stderr: str) -> None:
    """Standard streams on /dev/null and the two files, as a fresh interpreter opens them."""
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, 'w', closefd=False)
    sys.stderr = open(2, 'w', errors='backslashreplace', closefd=False)


def fresh_random_state() -> None:
    """Random state as a new process starts with: Python's, numpy's and torch's
    drawn from the OS."""
    import numpy
    import torch
    random.seed()
    numpy.random.seed()
    torch.seed()


def run_child(argv: List[str], cwd: str, env: dict, stdout: str, stderr: str) -> None:
    """In the forked child: run ``argv[0]`` as ``__main__`` and exit with its status."""
    code = 1
    try:
        redirect_streams(stdout, stderr)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        script = os.path.abspath(argv[0])
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(script)
        fresh_random_state()
        try:
            runpy.run_path(script, run_name='__main__')
            code = 0
        except SystemExit as exited:  # as python exits: None is 0, an int itself, anything else printed and 1
            code = exited.code if isinstance(exited.code, int) else int(exited.code is not None)
            if code == 1 and not isinstance(exited.code, int):
                print(exited.code, file=sys.stderr)
        except BaseException as uncaught:  # noqa: B902  (Python hands it to sys.excepthook from the script's frame on,
            frames = uncaught.__traceback__  # status 1)
            while frames is not None and frames.tb_frame.f_code.co_filename != script:
                frames = frames.tb_next
            # sys.excepthook prints the error's own traceback: from the script's frame on, as Python does
            sys.excepthook(type(uncaught), uncaught.with_traceback(frames), frames)
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: B902  (a closed stream: nothing more can be written)
                pass
        os._exit(code)


def serve() -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        for name in PRELOADED:
            import_module(name)
    assert 'mmrmt' not in sys.modules, 'a preloaded library imported mmrmt'
    threads = os.listdir('/proc/self/task')
    assert len(threads) == 1, f'the preloaded libraries started {len(threads) - 1} threads: a fork would break them'
    for line in sys.stdin:
        request = json.loads(line)
        timeout = request.pop('timeout')
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(**request)
        child = os.pidfd_open(pid)
        ended = select.select([child], [], [], timeout)[0]
        os.close(child)
        if not ended:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({'returncode': os.waitstatus_to_exitcode(status) if ended else None}), flush=True)


if __name__ == '__main__':
    serve()

"""mmengine's Runner, keeping to a work dir of its own."""
import os
import os.path as osp
import sys
from inspect import signature
from typing import Any, Callable, List, NoReturn, Optional

from mmengine.dist import broadcast_object_list
from mmengine.logging import MMLogger
from mmengine.registry import RUNNERS
from mmengine.runner import Runner, find_latest_checkpoint

from mmrmt.atomic_file import remove_leftover_temporaries, replaced_atomically
from mmrmt.checkpoint import is_remote, one_line_reason, read_checkpoint_to_load
from mmrmt.registry import RUNNERS as MMRMT_RUNNERS
from mmrmt.run_claim import ClaimError, RunClaim
from mmrmt.upstream_fixes import make_checkpoint_inert
from .inductor_options import compile_setting_problem
from .own_checkpoint import (ForeignCheckpointError, checkpoint_folder, checkpoint_out_dir, earlier_run_problem,
                             keep_checkpoint_paths_own, own_last_checkpoint)
from .resume_rng_hook import ResumeRNGHook

#: The file a run holds in its work dir (:mod:`mmrmt.run_claim`).
LOCK_FILE = 'run.lock'


def work_dir_claim(work_dir: str) -> RunClaim:
    """The claim of ``work_dir`` by one run at a time: its ``run.lock``."""
    return RunClaim(osp.join(work_dir, LOCK_FILE), f'work dir {work_dir} is in use', '--work-dir')


@MMRMT_RUNNERS.register_module()
@RUNNERS.register_module()
class OwnWorkDirRunner(Runner):
    """mmengine's :class:`~mmengine.runner.Runner` (same arguments), keeping to a work dir of its own: the checkpoint
    gate of every launcher (:func:`~mmrmt.checkpoint.read_checkpoint_to_load` of a local ``load_from``, the ``compile``
    options known, before the work dir exists), one run at a time (:func:`work_dir_claim`, taken by rank 0 before
    anything is written, given back after ``train()``, ``val()``, ``test()``), no training over an earlier run's
    checkpoints unless resuming (:func:`~mmrmt.engine.own_checkpoint.earlier_run_problem`), ``resume=True`` from the
    run's own checkpoints (moved into its folder: :func:`~mmrmt.engine.own_checkpoint.own_last_checkpoint`, the
    message hub's paths too), a :class:`ResumeRNGHook` unless the hooks hold one, plain data only in a loaded
    ``meta['config']``, local checkpoints written whole. mmrmt's configs select it
    (``runner_type='mmrmt.OwnWorkDirRunner'``); mmseg's test.py by the fix ``honoured-runner-type``."""

    honoured_by_from_cfg = True

    def __init__(self, *args, **kwargs) -> None:
        arguments = signature(Runner.__init__).bind(self, *args, **kwargs).arguments
        load_from, resume = arguments.get('load_from'), bool(arguments.get('resume'))
        self._auto_resume = resume and load_from is None  # resume from the work dir's last checkpoint
        self._work_dir_claim = work_dir_claim(osp.abspath(arguments['work_dir']))  # rank 0 takes it in setup_env
        self._notes: List[str] = []  # warnings of setup_env, for the log once it exists
        try:  # mmdet's and mmseg's tools hand a checkpoint over unchecked; a refused pickle raises its own line
            if isinstance(load_from, str) and not is_remote(load_from):
                read_checkpoint_to_load(load_from, '--resume' if resume else 'load_from', resume)
        except ValueError as error:
            sys.exit(f'error: {error}')
        problem = compile_setting_problem((arguments.get('cfg') or {}).get('compile'))
        if problem is not None:  # torch.compile would refuse it only after the work dir, the log and the model
            sys.exit(f'error: {problem}')
        work_dir = arguments.get('work_dir')
        if isinstance(work_dir, str) and not is_remote(work_dir):
            try:  # mmengine makes it first thing, with a traceback where it cannot (e.g. under /proc, even as root)
                os.makedirs(work_dir, exist_ok=True)
            except OSError as error:
                sys.exit(f'error: work dir {work_dir} cannot be created ({error.strerror}); choose another --work-dir')
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self._work_dir_claim.give_back()
            raise

    def setup_env(self, env_cfg: dict) -> None:
        """mmengine's, then, before anything is written, the work dir's claim, the removal of checkpoints a killed
        run left half-written and, for an automatic resume, the checkpoint to resume from."""
        super().setup_env(env_cfg)
        self._end_unless_rank0_finds_none(self._take_work_dir)
        out_dir = checkpoint_out_dir(self.cfg)
        if self.rank == 0 and not is_remote(out_dir or ''):
            for leftover in remove_leftover_temporaries(checkpoint_folder(self.work_dir, out_dir)):
                self._notes.append(f'removed {leftover}: a checkpoint a killed run did not finish writing')
        if self._auto_resume:
            try:
                self._own_resume_checkpoint, moved = own_last_checkpoint(self.work_dir, out_dir)
            except ForeignCheckpointError as error:
                self._exit_with(str(error))
            if moved:
                self._notes.append(moved)

    def dump_config(self) -> None:
        """mmengine's copy of the config in the work dir, but never over that of an earlier run whose checkpoints are
        there (each run's own copy is in its log folder, ``vis_data/config.py``)."""
        if earlier_run_problem(self.work_dir, checkpoint_out_dir(self.cfg)) is None:
            super().dump_config()

    def build_logger(self, *args, **kwargs) -> MMLogger:
        """mmengine's, its first lines the notes of :meth:`setup_env`."""
        logger = super().build_logger(*args, **kwargs)
        for note in self._notes:
            logger.warning(note)
        return logger

    def train(self) -> Any:
        """mmengine's, refused in one line where a run that does not resume would overwrite an earlier run's
        checkpoints (any launcher: mmdet's and mmseg's own train.py too)."""
        if not self._resume:
            self._end_unless_rank0_finds_none(
                lambda: earlier_run_problem(self.work_dir, checkpoint_out_dir(self.cfg)))
        return self._in_own_work_dir(super().train)

    def val(self) -> dict:
        return self._in_own_work_dir(super().val)

    def test(self) -> dict:
        return self._in_own_work_dir(super().test)

    def register_hooks(self, *args, **kwargs) -> None:
        """mmengine's, then a :class:`~mmrmt.engine.ResumeRNGHook` unless one was registered."""
        super().register_hooks(*args, **kwargs)
        if not any(isinstance(hook, ResumeRNGHook) for hook in self._hooks):
            self.register_hook(ResumeRNGHook())

    def load_checkpoint(self, *args, **kwargs) -> dict:
        """mmengine's, with ``meta['config']`` (what :meth:`resume` runs) as plain data."""
        return make_checkpoint_inert(super().load_checkpoint(*args, **kwargs))

    def load_or_resume(self) -> None:
        """mmengine's, with ``resume=True`` resuming from the run's own last checkpoint."""
        if self._auto_resume and not self._has_loaded:
            self._load_from = self._own_resume_checkpoint
        super().load_or_resume()

    def resume(self, filename: str, *args, **kwargs) -> None:
        """mmengine's (a checkpoint whose optimizer state does not fit this run ends with one line), then the message
        hub's checkpoint paths moved into the run's folder."""
        try:
            super().resume(filename, *args, **kwargs)
        except (ValueError, KeyError) as error:  # torch's optimizer refuses another model's state
            self._exit_with(f'--resume {filename} is not a checkpoint of this config ({one_line_reason(error)}); '
                            'resume from a checkpoint this run wrote, or start from its weights with --cfg-options '
                            f'load_from={filename}')
        keep_checkpoint_paths_own(self.message_hub, checkpoint_folder(self.work_dir, checkpoint_out_dir(self.cfg)))

    def save_checkpoint(self, out_dir: str, filename: str, *args, **kwargs) -> None:
        """mmengine's, writing a local checkpoint whole or not at all; a failure ends the run with one line naming
        the last complete checkpoint."""
        if is_remote(out_dir):
            return super().save_checkpoint(out_dir, filename, *args, **kwargs)
        destination = osp.join(out_dir, filename)
        try:
            with replaced_atomically(destination) as temporary:
                super().save_checkpoint(out_dir, osp.basename(temporary), *args, **kwargs)
        except OSError as error:
            last = find_latest_checkpoint(self.work_dir)
            kept = (f'the last complete one is {last} (resume from it with --resume once there is room)'
                    if last else 'no earlier checkpoint of this run exists')
            self._exit_with(f'cannot write checkpoint {destination}: {error.strerror or error}; nothing of it '
                            f'was left, and {kept}')

    def _in_own_work_dir(self, phase: Callable[[], Any]) -> Any:
        self._end_unless_rank0_finds_none(self._take_work_dir)  # held after __init__; taken again after a phase
        try:
            return phase()
        finally:
            self._work_dir_claim.give_back()

    def _take_work_dir(self) -> Optional[str]:
        """Take the work dir's claim (a claim held stays held); why it could not be taken, or None."""
        try:
            self._work_dir_claim.take()
        except ClaimError as error:
            return str(error)
        except OSError as error:  # e.g. a read-only work dir: every rank must learn it
            return f'cannot create {self._work_dir_claim.path}: {error.strerror}'
        return None

    def _end_unless_rank0_finds_none(self, problem_of: Callable[[], Optional[str]]) -> None:
        """Rank 0 calls ``problem_of``; every rank learns its answer and ends with it, unless it is None."""
        problem = [problem_of() if self.rank == 0 else None]
        broadcast_object_list(problem)
        if problem[0] is not None:
            self._exit_with(problem[0])

    def _exit_with(self, message: str) -> NoReturn:
        """End this process with status 1; rank 0 prints ``error: <message>``."""
        if self.rank == 0:
            sys.exit(f'error: {message}')
        sys.exit(1)

"""mmengine's Runner, keeping to a work dir of its own."""
import os.path as osp
import sys
from inspect import signature
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Union

from mmengine.dist import broadcast_object_list
from mmengine.hooks import Hook
from mmengine.logging import MMLogger
from mmengine.registry import RUNNERS
from mmengine.runner import Runner, find_latest_checkpoint

from mmrmt.atomic_file import remove_leftover_temporaries, replaced_atomically
from mmrmt.checkpoint import checkpoint_file_problem, is_remote, load_weights_only, read_checkpoint
from mmrmt.run_claim import ClaimError, RunClaim
from mmrmt.upstream_fixes import is_readable_safetensors, make_checkpoint_inert
from .inductor_options import compile_setting_problem
from .own_checkpoint import (ForeignCheckpointError, checkpoint_folder, checkpoint_out_dir, keep_checkpoint_paths_own,
                             own_last_checkpoint)
from .resume_rng_hook import ResumeRNGHook

#: The file a run holds in its work dir (:mod:`mmrmt.run_claim`).
LOCK_FILE = 'run.lock'


def work_dir_claim(work_dir: str) -> RunClaim:
    """The claim of ``work_dir`` by one run at a time: its ``run.lock``."""
    return RunClaim(osp.join(work_dir, LOCK_FILE), f'work dir {work_dir} is in use', '--work-dir')


def check_checkpoint_to_load(load_from: Optional[str], resume: bool) -> None:
    """End with one line, before mmengine makes the work dir, unless a local ``load_from`` (the
    checkpoint to load, or with ``resume`` to resume from) is a checkpoint holding weights only.

    mmdet's and mmseg's launchers pass ``load_from`` and ``--resume FILE`` to the runner
    unchecked: a missing, empty or corrupt file would otherwise end in a traceback after the work
    dir and log exist, and a file carrying code (refused by the weights-only load) likewise.
    Remote paths (``scheme://``) are left to mmengine's loaders.

    Raises:
        SystemExit: ``error: --resume|load_from FILE: <problem>; <fix>`` (a missing one:
            ``--resume|load_from checkpoint not found: FILE``, as the tools say it).
        CheckpointRefusedError: The file holds Python objects besides weights.
    """
    if not isinstance(load_from, str) or is_remote(load_from):
        return
    role, fix = (('--resume', 'give a checkpoint this run wrote') if resume else
                 ('load_from', 'give the path of a checkpoint file'))
    path = osp.expanduser(load_from)
    if not osp.isfile(path):
        sys.exit(f'error: {role} checkpoint not found: {load_from}; {fix}')  # the tools' wording
    if is_readable_safetensors(path):
        try:
            read_checkpoint(path)
        except ValueError as error:  # truncated or not a safetensors file: its one line
            sys.exit(f'error: {role}: {error}; {fix}')
        return
    problem = checkpoint_file_problem(path)
    if problem is not None:
        sys.exit(f'error: {role} {load_from}: {problem}; {fix}')
    load_weights_only(path, map_location='cpu')


def check_compile_options(cfg: Optional[dict]) -> None:
    """End with one line, before mmengine makes the work dir, unless the Inductor options of the config's
    ``compile`` setting exist and take their values (torch.compile refuses them only once the training
    step is compiled: after the work dir, the log and the model exist).

    Raises:
        SystemExit: ``error: compile.options.NAME: <problem>``.
    """
    problem = compile_setting_problem((cfg or {}).get('compile'))
    if problem is not None:
        sys.exit(f'error: {problem}')


@RUNNERS.register_module()
class OwnWorkDirRunner(Runner):
    """mmengine's :class:`~mmengine.runner.Runner`, with a work dir that
    belongs to one run at a time and a resume that reads only its own files.

    * **One run at a time.** Right after creating the work dir (and joining
      the process group of a distributed run), before writing anything, rank
      0 claims the work dir (:func:`work_dir_claim`) and tells the other
      ranks the outcome. A second run into the same work dir ends there,
      each rank with status 1, rank 0 printing one line that names the
      running one. A killed run's claim ends with its process.
      ``train()``, ``val()`` and ``test()`` give it back when they end, also
      on errors.
    * **Resume from its own checkpoints.** ``resume=True`` without
      ``load_from`` resumes from the checkpoint the work dir's
      ``last_checkpoint`` names, moved into the run's own checkpoint folder
      when it names another (a copied work dir), or ends with one line when
      that folder lacks it (see :func:`~mmrmt.engine.own_last_checkpoint`).
      After resuming, the last and best checkpoint paths of the message hub
      point into that folder too, so a new best checkpoint never deletes
      another work dir's.
    * **An exact resume that runs no code, whatever the hooks.** The runner
      registers a :class:`~mmrmt.engine.ResumeRNGHook` itself unless the
      config's ``custom_hooks`` name one (a user config replacing that list
      keeps it; a config listing it gets one, never two), and every
      checkpoint it loads holds in ``meta['config']``, the text mmengine's
      resume runs, only plain data (besides the upstream fix
      ``inert-resumed-config`` of :mod:`mmrmt.upstream_fixes`, which covers the
      loaders registered before mmrmt was imported).
    * **Whole checkpoints.** A local checkpoint is written to a temporary
      file and moved into place: a full disk leaves no truncated
      ``iter_N.pth``, and ``last_checkpoint`` keeps naming the last complete one.

    mmrmt's configs select it with ``runner_type='OwnWorkDirRunner'``
    (``configs/_base_/mmrmt_runtime.py``), which mmdet's and mmseg's own
    ``tools/train.py`` and ``tools/test.py`` honour. It takes the
    arguments of :class:`~mmengine.runner.Runner`.
    """

    #: mmseg's tools/test.py builds it too (the upstream fix ``honoured-runner-type``).
    honoured_by_from_cfg = True

    def __init__(self, *args, **kwargs) -> None:
        arguments = signature(Runner.__init__).bind(self, *args, **kwargs).arguments
        # resume=True without load_from: resume from the work dir's last checkpoint
        self._auto_resume = bool(arguments.get('resume')) and arguments.get('load_from') is None
        self._work_dir_claim: Optional[RunClaim] = None
        self._holds_work_dir = False
        self._notes: List[str] = []  # for the log, once it exists
        check_checkpoint_to_load(arguments.get('load_from'), bool(arguments.get('resume')))
        check_compile_options(arguments.get('cfg'))
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self._release_work_dir()
            raise

    def setup_env(self, env_cfg: dict) -> None:
        """mmengine's setup (process group, timestamp), then the work dir's claim, the removal of
        checkpoints a killed run left half-written and, for an automatic resume, the checkpoint to
        resume from: before anything is written."""
        super().setup_env(env_cfg)
        self._claim_work_dir()
        out_dir = checkpoint_out_dir(self.cfg)
        if self.rank == 0 and not is_remote(out_dir or ''):
            for leftover in remove_leftover_temporaries(checkpoint_folder(self.work_dir, out_dir)):
                self._note(f'removed {leftover}: a checkpoint a killed run did not finish writing')
        if self._auto_resume:
            try:
                self._own_resume_checkpoint, moved = own_last_checkpoint(
                    self.work_dir, checkpoint_out_dir(self.cfg))
            except ForeignCheckpointError as error:
                self._exit_with(str(error))
            if moved:
                self._note(moved)

    def build_logger(self, *args, **kwargs) -> MMLogger:
        """mmengine's logger, its first lines telling of a ``last_checkpoint`` moved into the run's folder."""
        logger = super().build_logger(*args, **kwargs)
        for note in self._notes:
            logger.warning(note)
        return logger

    def train(self) -> Any:
        return self._in_own_work_dir(super().train)

    def val(self) -> dict:
        return self._in_own_work_dir(super().val)

    def test(self) -> dict:
        return self._in_own_work_dir(super().test)

    def register_hooks(self,
                       default_hooks: Optional[Dict[str, Union[Hook, Dict]]] = None,
                       custom_hooks: Optional[Sequence[Union[Hook, Dict]]] = None) -> None:
        """mmengine's, then a :class:`~mmrmt.engine.ResumeRNGHook` unless one was registered."""
        super().register_hooks(default_hooks, custom_hooks)
        if not any(isinstance(hook, ResumeRNGHook) for hook in self._hooks):
            self.register_hook(ResumeRNGHook())

    def load_checkpoint(self, *args, **kwargs) -> dict:
        """mmengine's, returning the checkpoint with ``meta['config']`` as plain data (what
        :meth:`resume` hands to ``Config.fromstring``)."""
        return make_checkpoint_inert(super().load_checkpoint(*args, **kwargs))

    def load_or_resume(self) -> None:
        """mmengine's, with ``resume=True`` resuming from the run's own last checkpoint."""
        if self._auto_resume and not self._has_loaded:
            self._load_from = self._own_resume_checkpoint
        super().load_or_resume()

    def resume(self, filename: str, *args, **kwargs) -> None:
        """mmengine's, then the message hub's checkpoint paths moved into the run's folder."""
        super().resume(filename, *args, **kwargs)
        folder = checkpoint_folder(self.work_dir, checkpoint_out_dir(self.cfg))
        keep_checkpoint_paths_own(self.message_hub, folder)

    def save_checkpoint(self, out_dir: str, filename: str, *args, **kwargs) -> None:
        """mmengine's, writing a local checkpoint whole or not at all: to a temporary file beside
        it, then moved into place. A failure (e.g. a full disk) leaves no partial file and ends
        the run with one line naming the last complete checkpoint."""
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
        """Run ``phase`` holding the work dir's claim, given back afterwards."""
        if not self._holds_work_dir:
            self._claim_work_dir()
        try:
            return phase()
        finally:
            self._release_work_dir()

    def _claim_work_dir(self) -> None:
        """Rank 0 claims the work dir; every rank learns whether it got it (no rank waits on one
        that has left) and, if not, ends the process."""
        refusal = [None]
        if self.rank == 0:
            self._work_dir_claim = work_dir_claim(self.work_dir)
            try:
                self._work_dir_claim.take()
            except ClaimError as error:
                refusal = [str(error)]
            except OSError as error:  # e.g. a read-only work dir: every rank must learn it
                refusal = [f'cannot create {self._work_dir_claim.path}: {error.strerror}']
        broadcast_object_list(refusal)
        if refusal[0] is not None:
            self._exit_with(refusal[0])
        self._holds_work_dir = True

    def _release_work_dir(self) -> None:
        if self._work_dir_claim is not None:
            self._work_dir_claim.give_back()
        self._holds_work_dir = False

    def _note(self, message: str) -> None:
        """A warning for the log; kept until the logger exists."""
        logger = getattr(self, 'logger', None)
        if logger is None:
            self._notes.append(message)
        else:
            logger.warning(message)

    def _exit_with(self, message: str) -> NoReturn:
        """End this process with status 1; rank 0 prints ``error: <message>``."""
        if self.rank == 0:
            sys.exit(f'error: {message}')
        sys.exit(1)

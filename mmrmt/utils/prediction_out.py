"""``--out`` of the test tools, as mmdet's and mmseg's keep it: a detector's predictions in one ``.pkl`` file (written
atomically), a segmentor's label maps in a folder (mmseg's ``IoUMetric`` ``output_dir``)."""
import argparse
import os
import os.path as osp
from contextlib import contextmanager, nullcontext
from typing import Iterator, List, Optional, Tuple

from mmengine.config import Config

from mmrmt.run_claim import RunClaim
from .model_kind import config_scope
from .output_guard import check_new_file, check_not_an_input
from .preflight import PreflightError, check_writable


def add_prediction_out_arguments(parser: argparse.ArgumentParser) -> None:
    """``--out`` and ``--force``, as tools/test.py offers them."""
    parser.add_argument(
        '--out', help='detection: .pkl file receiving the predictions; segmentation: folder '
        'receiving the predicted label maps')
    parser.add_argument('--force', action='store_true', help='replace an existing --out file (detection)')


def check_prediction_out(cfg: Config, out: Optional[str], force: bool, inputs: List[Tuple[str, str]]) -> None:
    """Check ``--out`` (if given) before anything is built: a new ``.pkl`` file (or ``force``) for a detector, a
    writable folder for a segmentor, none of the run's ``inputs``."""
    if not out:
        return
    if config_scope(cfg) == 'mmdet':
        if not out.endswith(('.pkl', '.pickle')):
            raise PreflightError(f'--out must name a .pkl file for detection, got {out}')
        check_new_file(out, '--out', force, inputs)
    else:
        check_writable(out, '--out', is_dir=True)
        check_not_an_input(out, '--out', inputs)


@contextmanager
def prediction_out_claimed(cfg: Config, out: Optional[str]) -> Iterator[None]:
    """Within the block (build the runner and test inside), ``--out`` is this run's (rank 0, by torchrun's ``RANK``
    or slurm's ``SLURM_PROCID``, holds :func:`claim_path`) and a segmentor's test evaluator writes its maps there.

    Raises:
        ClaimError: Another run writes ``--out``.
    """
    if out and config_scope(cfg) == 'mmseg':
        cfg.test_evaluator.output_dir = out
        cfg.test_evaluator.keep_results = True
    claimed = out and os.environ.get('RANK', os.environ.get('SLURM_PROCID', '0')) == '0'  # no process group yet
    with RunClaim(claim_path(out), f'--out {out} is being written', '--out') if claimed else nullcontext():
        yield


def claim_path(out: str) -> str:
    """The claim file of ``--out``: ``.<name>.claim`` in its folder."""
    folder, name = osp.split(osp.abspath(out))
    return osp.join(folder, f'.{name}.claim')


def add_prediction_dump(runner, cfg: Config, out: Optional[str], force: bool) -> None:
    """Add a detector's ``--out`` dump to the built ``runner``'s test evaluator."""
    if out and config_scope(cfg) == 'mmdet':
        from .prediction_dump import AtomicDumpDetResults
        runner.test_evaluator.metrics.append(AtomicDumpDetResults(out, force))

"""One run at a time writes a given output file: a claim file beside it names the run.

Two ``tools/test.py --out same.pkl`` started at once would otherwise both pass
the check that ``same.pkl`` does not exist, and the later one would replace the
earlier one's file at its end. The claim is ``.<name>.claim`` beside the output,
created with ``O_CREAT | O_EXCL`` and holding the run's record (the JSON of a
work dir's lock, :class:`~mmrmt.engine.work_dir_lock.RunRecord`); a claim whose
run has ended (killed, crashed) is taken over.
"""
import json
import os
import os.path as osp
from contextlib import contextmanager
from dataclasses import asdict
from typing import Iterator

from mmrmt.engine.work_dir_lock import RunRecord, WorkDirBusyError, read_record
from .preflight import PreflightError


def launch_rank() -> int:
    """This process's rank in the run as its launcher set it (torchrun's ``RANK``, slurm's
    ``SLURM_PROCID``; 0 for a single process), known before the process group exists."""
    return int(os.environ.get('RANK', os.environ.get('SLURM_PROCID', '0')))


def claim_path(output: str) -> str:
    """The claim file of ``output``: ``.<name>.claim`` in its folder."""
    folder, name = osp.split(osp.abspath(output))
    return osp.join(folder, f'.{name}.claim')


@contextmanager
def claimed(output: str, what: str) -> Iterator[None]:
    """Hold the claim of ``output`` within the block (released after it, also on errors).

    Only the process of rank 0 claims (the one that writes the file), so the
    ranks of one distributed run do not refuse each other.

    Args:
        output (str): The file the run writes at its end.
        what (str): Its role in the message, e.g. ``'--out'``.

    Raises:
        PreflightError: A live run claims it already, or its claim file is
            not one mmrmt wrote.
    """
    if launch_rank() != 0:
        yield
        return
    path = claim_path(output)
    os.makedirs(osp.dirname(path), exist_ok=True)  # the output's folder, which the run would make anyway
    record = RunRecord.of_this_process()
    for _ in range(3):  # an ended run's claim is removed, then taken
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = read_record(path)
            except WorkDirBusyError as error:
                raise PreflightError(str(error)) from None
            if holder is not None and holder.is_alive():
                raise PreflightError(f'{what} {output} is being written by another run ({holder.describe()}); '
                                     f'wait for it to end, or choose another {what}')
            if holder is not None:
                os.unlink(path)
            continue
        try:
            with os.fdopen(descriptor, 'w') as claim:
                claim.write(json.dumps(asdict(record)))
            yield
        finally:
            release_claim(path, record)
        return
    raise PreflightError(f'{what} {output}: other runs keep claiming it; start one run at a time')


def release_claim(path: str, record: RunRecord) -> None:
    """Delete claim file ``path`` if it still holds ``record``."""
    try:
        if read_record(path) == record:
            os.unlink(path)
    except (OSError, WorkDirBusyError):
        pass  # gone, or no longer this run's

"""tools/test.py's ``--out`` of a detector: the predictions pickled into place atomically."""
from mmdet.evaluation import DumpDetResults
from mmengine.fileio import dump
from mmengine.logging import print_log

from ..atomic_file import replaced_atomically
from .preflight import PreflightError


class AtomicDumpDetResults(DumpDetResults):
    """mmdet's :class:`~mmdet.evaluation.DumpDetResults`, writing its file whole or not at all (without ``force``
    a file that appeared there meanwhile is kept).

    Args:
        out_file_path (str): The ``.pkl`` file to write.
        force (bool): Whether an existing file there is replaced.
    """

    def __init__(self, out_file_path: str, force: bool) -> None:
        super().__init__(out_file_path=out_file_path)
        self.force = force

    def compute_metrics(self, results: list) -> dict:
        try:
            with replaced_atomically(self.out_file_path, overwrite=self.force) as temporary:
                dump(results, temporary, file_format='pkl')
        except FileExistsError:
            raise PreflightError(f'--out {self.out_file_path} was created by someone else while this run was testing; '
                                 'it is kept and the predictions were not written: choose another --out, or add '
                                 '--force to replace it') from None
        print_log(f'Results has been saved to {self.out_file_path}.', logger='current')
        return {}

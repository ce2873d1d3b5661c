"""The rows of tools/analysis_tools/benchmark.py's table (:func:`mmrmt.benchmark.format_table`), read back."""
import re

#: A torch row without an error column: impl, mode, then seconds, img/s, peak MB, speed-up, memory, process
#: peak MB. The numbers are read as printed, whatever their sign or value: in a process that ran other work
#: first (the in-process tests under xdist) the iterations' peak over the memory in use before them may be 0 or
#: below it, and the memory ratio then nan, inf or negative.
ROW = re.compile(r'^\| (\w+(?: bf16 autocast)?) \| (infer|train) \|((?: [^|]+ \|){6})$', re.M)


def rows(output: str) -> dict:
    """(impl, mode) -> the row's six numbers, of each torch row in ``output``."""
    return {(impl, mode): tuple(float(cell.strip().rstrip('x')) for cell in numbers.split('|')[:-1])
            for impl, mode, numbers in ROW.findall(output)}

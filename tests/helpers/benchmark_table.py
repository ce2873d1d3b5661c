"""The rows of tools/analysis_tools/benchmark.py's table (:func:`mmrmt.benchmark.format_table`), read back."""
import re

#: A torch row without an error column: impl, mode, seconds, img/s, peak MB, speed-up, memory (nan where the
#: baseline's iterations added no peak), process peak MB.
ROW = re.compile(r'^\| (\w+(?: bf16 autocast)?) \| (infer|train) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| ([\d.]+)x \| '
                 r'([\d.]+|nan)x \| (\d+) \|$', re.M)


def rows(output: str) -> dict:
    """(impl, mode) -> the row's six numbers, of each torch row in ``output``."""
    return {(impl, mode): tuple(map(float, numbers)) for impl, mode, *numbers in ROW.findall(output)}

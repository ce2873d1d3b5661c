"""Where a graph's time goes in onnxruntime: its profile summed per operator type."""
import json
from collections import defaultdict
from typing import Dict, List, Tuple


def time_per_op_type(profile_path: str, skip_runs: int = 1) -> List[Tuple[str, float, int]]:
    """(op type, milliseconds, nodes run) from an onnxruntime JSON profile, slowest first.

    Sums the kernel times (events of category 'Node' ending in '_kernel_time')
    of the runs after the first ``skip_runs`` (warm-up).
    """
    with open(profile_path) as profile:
        events = json.load(profile)
    runs = sorted(event['ts'] + event['dur'] for event in events if event.get('name') == 'model_run')
    start = runs[skip_runs - 1] if 0 < skip_runs <= len(runs) else 0
    totals: Dict[str, float] = defaultdict(float)
    counts: Dict[str, int] = defaultdict(int)
    for event in events:
        if (event.get('cat') == 'Node' and event.get('name', '').endswith('_kernel_time')
                and event['ts'] >= start):
            op_type = event.get('args', {}).get('op_name', '?')
            totals[op_type] += event['dur'] / 1000
            counts[op_type] += 1
    return sorted(((op, ms, counts[op]) for op, ms in totals.items()), key=lambda row: -row[1])


def format_profile(rows: List[Tuple[str, float, int]], runs: int, top: int) -> str:
    """A Markdown table of the ``top`` op types: ms per run and share of the kernel time."""
    total = sum(ms for _, ms, _ in rows) or 1.0
    lines = ['| op type | ms per run | share | nodes per run |', '|---|---|---|---|']
    for op, ms, count in rows[:top]:
        lines.append(f'| {op} | {ms / runs:.1f} | {100 * ms / total:.1f} % | {count // runs} |')
    lines.append(f'| all | {total / runs:.1f} | 100 % | |')
    return '\n'.join(lines)

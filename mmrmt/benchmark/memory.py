"""Peak memory of a worker: on the CPU its resident set's high-water mark (/proc, Linux), on CUDA torch's."""
import re

import torch


def proc_status_kb(field: str) -> int:
    """A field of ``/proc/self/status`` in kB (``VmRSS``, ``VmHWM``)."""
    with open('/proc/self/status') as status:
        return int(re.search(rf'^{field}:\s+(\d+) kB', status.read(), re.M).group(1))


def peak_baseline(device: str) -> int:
    """Start peak tracking now; return the current usage in bytes."""
    if device == 'cuda':
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()
    with open('/proc/self/clear_refs', 'w') as refs:
        refs.write('5')  # resets VmHWM to the current VmRSS
    return proc_status_kb('VmRSS') * 1024


def peak_now(device: str) -> int:
    """The peak usage in bytes since :func:`peak_baseline`."""
    if device == 'cuda':
        return torch.cuda.max_memory_allocated()
    return proc_status_kb('VmHWM') * 1024

"""What a CPU offers the deployment runtimes: :mod:`mmrmt.cpu_features`, read at the bottom layer (the
models choose kernels by it too), under the runtime package's name."""
from mmrmt.cpu_features import FEATURES, CPUFeatures, cpu_features, parse_cpuinfo

__all__ = ['FEATURES', 'CPUFeatures', 'cpu_features', 'parse_cpuinfo']

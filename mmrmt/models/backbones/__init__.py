from .rmt import RMT
from .resmlp import ResMLP
from .rest import ResT

__all__ = ['ResMLP', 'ResT', 'RMT']

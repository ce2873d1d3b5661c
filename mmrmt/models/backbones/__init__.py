from .rmt import RMT
from .resmlp import ResMLP

__all__ = ['ResMLP', 'RMT']

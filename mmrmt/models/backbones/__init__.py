from .rmt import RMT, ManhattanSelfAttention2d
from .resmlp import ResMLP
from .rest import ResT

__all__ = ['ManhattanSelfAttention2d', 'ResMLP', 'ResT', 'RMT']

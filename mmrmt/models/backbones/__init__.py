from .resmlp import ResMLP
from .rest import ResT
from .rmt import RMT, ManhattanSelfAttention2d

__all__ = ['ManhattanSelfAttention2d', 'ResMLP', 'ResT', 'RMT']

from .rmt import RMT

__all__ = ['RMT']

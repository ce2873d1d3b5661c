from .export_mode import is_exporting
from .norm_projection import norm_then_project

__all__ = ['is_exporting', 'norm_then_project']

from .export_mode import is_exporting

__all__ = ['is_exporting']

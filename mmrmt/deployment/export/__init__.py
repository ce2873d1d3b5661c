"""Exporting mmrmt's models: the export forms of their layers."""
from .backbone_forms import EXPORT_FORMS, export_implementation

__all__ = ['EXPORT_FORMS', 'export_implementation']

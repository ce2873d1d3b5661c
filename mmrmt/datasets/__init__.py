"""Datasets shipped with mmrmt: the synthetic demo sets."""
from .demo_data import DEMO_DET_CLASSES, DEMO_SEG_CLASSES, foreign_data_problem, make_demo_data

__all__ = ['DEMO_DET_CLASSES', 'DEMO_SEG_CLASSES', 'foreign_data_problem', 'make_demo_data']

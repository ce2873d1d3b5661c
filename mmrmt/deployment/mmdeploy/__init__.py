"""mmdeploy's conversion of mmrmt models with mmrmt's rewriters, and its predictions' parity with torch.

The one part of mmrmt that imports mmdeploy (an optional dependency):
importing it registers the rewriters.
"""
from .errors import InexactExportError
from .parity import BOX_TOLERANCE, MIN_EQUAL_FRACTION, Parity, prediction_parity
from .rewriters import SUPPORTED_BACKENDS
from .route import compare_with_torch, convert, input_not_filled, save_initialised_weights

__all__ = ['BOX_TOLERANCE', 'MIN_EQUAL_FRACTION', 'SUPPORTED_BACKENDS', 'InexactExportError', 'Parity',
           'compare_with_torch', 'convert', 'input_not_filled', 'prediction_parity', 'save_initialised_weights']

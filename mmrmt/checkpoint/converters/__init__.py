"""One converter per family of upstream files, each to the keys of an mmrmt backbone (or, for the RMT authors'
trained detectors and segmentors, of a whole model)."""
from .backbones import (match_arch, resmlp_deit_to_timm, rest_detectron2_to_mmrmt, rest_widths_depths,
                        rmt_upstream_to_mmrmt, rmt_widths_depths, stage_depths)
from .rmt_trained import Conversion, check_class_names, convert_upstream_trained

__all__ = [
    'resmlp_deit_to_timm', 'rest_detectron2_to_mmrmt', 'rest_widths_depths', 'rmt_upstream_to_mmrmt',
    'rmt_widths_depths', 'Conversion', 'check_class_names', 'convert_upstream_trained', 'match_arch',
    'stage_depths'
]

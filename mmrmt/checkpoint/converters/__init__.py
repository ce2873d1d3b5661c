"""One converter per family of upstream backbone files, each to the keys of an mmrmt backbone (the RMT authors'
trained detectors and segmentors: tools/model_converters/rmt_upstream_trained_to_mmrmt.py, as OpenMMLab keeps
its model converters)."""
from .backbones import (match_arch, resmlp_deit_to_timm, rest_detectron2_to_mmrmt, rest_widths_depths,
                        rmt_upstream_to_mmrmt, rmt_widths_depths, stage_depths)

__all__ = [
    'resmlp_deit_to_timm', 'rest_detectron2_to_mmrmt', 'rest_widths_depths', 'rmt_upstream_to_mmrmt',
    'rmt_widths_depths', 'match_arch', 'stage_depths'
]

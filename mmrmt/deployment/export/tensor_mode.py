"""A model's tensor-mode forward as a module of tensors in, a flat tuple of tensors out.

What gets exported, per kind of model (mmdet's ``_forward`` and mmseg's
``forward(mode='tensor')``: no box decoding, no NMS, no resizing):

* a backbone alone: its pyramid features, ``feature_0``...;
* a single-stage detector: its head's raw maps per level (RetinaNet:
  ``head_0_<level>`` class scores, ``head_1_<level>`` box deltas);
* a two-stage detector, for one image: the RPN's raw maps (``rpn_0_<level>``
  scores, ``rpn_1_<level>`` deltas) and the RoI head's outputs
  (``roi_0`` class scores, ``roi_1`` box deltas, ``roi_2`` mask logits of the
  first 100 proposals) for proposals given as a second input, (R, 4) boxes
  in input pixels: the RPN's decoding and NMS happen outside, as mmdet does
  it in ``rpn_head.predict_by_feat``. A cascade RoI head gives what mmdet's
  ``CascadeRoIHead.forward`` returns: ``roi_0_0`` the class scores averaged
  over the stages, ``roi_1_0`` the last stage's box deltas (relative to the
  boxes the earlier stages refined, which it does not return) and ``roi_2_0``
  the mask probabilities averaged over the stages;
* a segmentor: the decode head's logits, ``seg_logits``, at 1/4 of the input.
"""
from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

#: Image sizes dynamic graphs accept at least: two tokens on the 1/32 grid
#: (torch.export takes a dimension of size 1 for a constant).
MIN_DYNAMIC_SIZE = 64


def flatten_outputs(outputs, prefix: str) -> Tuple[List[torch.Tensor], List[str]]:
    """Tensors of nested tuples / lists in order, named ``prefix_i_j...`` by position."""
    if isinstance(outputs, torch.Tensor):
        return [outputs], [prefix]
    tensors, names = [], []
    for index, item in enumerate(outputs):
        item_tensors, item_names = flatten_outputs(item, f'{prefix}_{index}')
        tensors += item_tensors
        names += item_names
    return tensors, names


class TensorModeModel(nn.Module):
    """The tensor-mode forward of a built mmdet / mmseg model, or of its backbone.

    Args:
        model (nn.Module): A detector or segmentor built from a config, or
            an mmrmt backbone.
        backbone_only (bool): Export ``model.backbone`` alone.
    """

    def __init__(self, model: nn.Module, backbone_only: bool = False) -> None:
        super().__init__()
        self.model = model
        self.kind = 'backbone' if backbone_only else self.model_kind(model)

    @staticmethod
    def model_kind(model: nn.Module) -> str:
        """'backbone', 'two_stage', 'single_stage' or 'segmentor'; ValueError for anything else."""
        from mmrmt.models.backbones.base_backbone import PyramidBackbone
        from mmrmt.utils.model_kind import model_kind
        kind = 'backbone' if isinstance(model, PyramidBackbone) else model_kind(model)
        if kind is not None:
            return kind
        raise ValueError(f'cannot export a {type(model).__name__} whole: only detectors with a '
                         'bbox_head or an RPN and RoI head, and segmentors with a decode_head '
                         '(or --backbone-only)')

    @property
    def input_names(self) -> List[str]:
        return ['image', 'proposals'] if self.kind == 'two_stage' else ['image']

    @property
    def batch_is_dynamic(self) -> bool:
        """Whether the batch size may vary (two-stage detectors take one image)."""
        return self.kind != 'two_stage'

    @property
    def size_is_dynamic(self) -> bool:
        """Whether a graph traced at one image size serves others (not for cascade RoI heads,
        whose stages clip the refined boxes to the traced size)."""
        from mmdet.models.roi_heads import CascadeRoIHead
        return not isinstance(getattr(self.model, 'roi_head', None), CascadeRoIHead) or self.kind == 'backbone'

    def example_inputs(self, height: int, width: int, batch: int = 1, generator: Optional[torch.Generator] = None,
                       min_proposal_side: float = 1.0) -> Tuple[torch.Tensor, ...]:
        """Random inputs: normal images and, for two-stage detectors, 40 proposals (sides of at least
        ``min_proposal_side`` pixels)."""
        image = torch.randn(batch if self.batch_is_dynamic else 1, 3, height, width, generator=generator)
        if self.kind != 'two_stage':
            return (image, )
        return image, random_proposals(40, height, width, generator, min_proposal_side)

    def forward(self, image: torch.Tensor, *proposals: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        return tuple(self.named_forward(image, *proposals)[0])

    def output_names(self, *inputs: torch.Tensor) -> List[str]:
        with torch.no_grad():
            return self.named_forward(*inputs)[1]

    def named_forward(self, image: torch.Tensor, *proposals: torch.Tensor) -> Tuple[list, List[str]]:
        if self.kind == 'backbone':
            backbone = getattr(self.model, 'backbone', self.model)
            return flatten_outputs(backbone(image), 'feature')
        if self.kind == 'single_stage':
            return flatten_outputs(self.model._forward(image), 'head')
        if self.kind == 'segmentor':
            return [self.model._forward(image)], ['seg_logits']
        from mmdet.structures import DetDataSample
        from mmengine.structures import InstanceData
        features = self.model.extract_feat(image)
        rpn_tensors, rpn_names = flatten_outputs(self.model.rpn_head(features), 'rpn')
        # cascade heads clip each stage's refined boxes to the image (a constant of the graph); set
        # without the deep copy metainfo=... makes, which a traced (symbolic) size does not survive
        sample = DetDataSample()
        sample.set_field(tuple(image.shape[-2:]), 'img_shape', field_type='metainfo')
        roi_outputs = self.model.roi_head.forward(features, [InstanceData(bboxes=proposals[0])], [sample])
        roi_tensors, roi_names = flatten_outputs(roi_outputs, 'roi')
        return rpn_tensors + roi_tensors, rpn_names + roi_names


def random_proposals(count: int, height: int, width: int, generator: Optional[torch.Generator] = None,
                     min_side: float = 1.0) -> torch.Tensor:
    """``count`` (x1, y1, x2, y2) boxes inside a (height, width) image, of all sizes (each side at least
    ``min_side`` pixels)."""
    corners = torch.rand(count, 2, 2, generator=generator) * torch.tensor([width, height])
    start = corners.min(1).values
    return torch.cat((start, torch.maximum(corners.max(1).values + 1, start + min_side)), 1)


def dynamic_axes(model: TensorModeModel, image_size: bool = True) -> dict:
    """The TorchScript exporter's ``dynamic_axes`` of the inputs.

    The number of proposals of a two-stage graph is always dynamic (the RoI
    part runs on the RPN's proposals, then on the detections); with
    ``image_size`` False the images are fixed.
    """
    axes = {}
    if image_size:
        axes['image'] = {2: 'height', 3: 'width', **({0: 'batch'} if model.batch_is_dynamic else {})}
    if model.kind == 'two_stage':
        axes['proposals'] = {0: 'num_proposals'}
    return axes


def dynamic_shapes(model: TensorModeModel, max_size: int = 8192) -> Sequence[dict]:
    """The dynamo exporter's ``dynamic_shapes`` of the inputs."""
    from torch.export import Dim
    image = {2: Dim('height', min=MIN_DYNAMIC_SIZE, max=max_size),
             3: Dim('width', min=MIN_DYNAMIC_SIZE, max=max_size)}
    if model.batch_is_dynamic:
        image[0] = Dim('batch', min=1, max=1024)
    if model.kind == 'two_stage':  # ``*proposals`` of forward(): a tuple of one
        return image, ({0: Dim('num_proposals', min=2, max=100000)}, )
    return (image, )

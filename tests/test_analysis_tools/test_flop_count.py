"""tools/analysis_tools/get_flops.py in-process: attention FLOPs and whole-config counts (its command line as a
process: tests/tools/test_get_flops.py)."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.analysis import FlopAnalyzer
from mmengine.config import Config
from torch import nn

from mmrmt.models.backbones import RMT
from helpers.tool_modules import REPO, import_tool

get_flops = import_tool('tools/analysis_tools/get_flops.py')
pytestmark = pytest.mark.slow  # whole detectors built and traced


class FusedAttention(nn.Module):

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class ExplicitAttention(nn.Module):

    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, dim=-1) @ v


def test_fused_attention_counts_as_its_two_matrix_products():
    q, k, v = torch.rand(2, 3, 5, 8), torch.rand(2, 3, 7, 8), torch.rand(2, 3, 7, 4)
    fused = FlopAnalyzer(FusedAttention(), (q, k, v))
    fused.set_op_handle('aten::scaled_dot_product_attention', get_flops.attention_flops)
    explicit = FlopAnalyzer(ExplicitAttention(), (q, k, v))
    assert fused.total() == explicit.total() == 2 * 3 * 5 * 7 * (8 + 4)


def test_detector_and_backbone_counts():
    cfg = Config.fromfile(str(REPO / 'configs/rmt/retinanet_rmt-t_fpn_1x_coco.py'))
    whole = get_flops.complexity(cfg.copy(), (64, 96))
    backbone = get_flops.complexity(cfg.copy(), (64, 96), backbone_only=True)
    assert whole['params'] == 23017236  # as built from the config (tests/configs)
    rmt = RMT(arch='t', out_indices=(1, 2, 3))
    assert backbone['params'] == sum(param.numel() for param in rmt.parameters())
    assert 0 < backbone['flops'] < whole['flops']
    assert 0 < backbone['product_flops'] < backbone['flops']
    # Convolutions and linear layers scale with the pixels; attention grows faster.
    larger = get_flops.complexity(cfg.copy(), (128, 192), backbone_only=True)
    assert 4 * backbone['flops'] <= larger['flops'] < 5 * backbone['flops']


def test_cascade_masks_run_on_the_first_100_proposals():
    cfg = Config.fromfile(str(REPO / 'configs/rmt/cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py'))
    model = get_flops.tensor_forward(get_flops.build_cpu_model(cfg), 128, 192)
    with torch.no_grad():
        outs = model(torch.rand(1, 3, 128, 192))[-1]  # the RoI head's outputs
    stages = model.roi_head.num_stages
    box_rows = {out.shape[0] for out in outs[:2 * stages]}
    mask_rows = {out.shape[0] for out in outs[2 * stages:]}
    assert len(outs) == 3 * stages and len(box_rows) == 1 and box_rows.pop() > 100 and mask_rows == {100}


def test_fast_and_reference_paths_count_the_same_flops():
    """The fast path's fused ops (its autograd functions, its inference-only
    attention) must trace as countable ops, or its FLOPs come out short."""
    cfg = Config.fromfile(str(REPO / 'configs/rmt/retinanet_rmt-t_fpn_1x_coco.py'))
    counts = {}
    for impl in ('fast', 'reference'):
        impl_cfg = cfg.copy()
        impl_cfg.model.backbone.impl = impl
        counts[impl] = get_flops.complexity(impl_cfg, (64, 96), backbone_only=True)
    assert counts['fast'] == counts['reference']

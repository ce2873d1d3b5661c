"""mmrmt.amp.float32_cpu_kernels: a two-stage detector trains and predicts under CPU bf16 autocast, its
matrix layers in bf16 and mmcv's RoIAlign and NMS on float32 tensors."""
from collections import Counter
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
import torch
from mmdet.structures import DetDataSample
from mmdet.structures.mask import BitmapMasks
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData
from torch import nn

import mmrmt.engine  # noqa: F401  (registers the test config's custom imports)
from mmrmt.amp import float32_cpu_kernels

CONFIG = Path(__file__).parents[1] / 'data' / 'configs' / 'mask-rcnn_rmt-tiny_fpn_test.py'
SIZE = 64


def build_detector() -> nn.Module:
    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    torch.manual_seed(0)
    return MODELS.build(Config.fromfile(str(CONFIG)).model)


def samples() -> List[DetDataSample]:
    mask = np.zeros((1, SIZE, SIZE), np.uint8)
    mask[0, 8:40, 12:50] = 1
    sample = DetDataSample(metainfo=dict(img_shape=(SIZE, SIZE), ori_shape=(SIZE, SIZE), scale_factor=(1., 1.),
                                         pad_shape=(SIZE, SIZE), batch_input_shape=(SIZE, SIZE)))
    sample.gt_instances = InstanceData(bboxes=torch.tensor([[12., 8., 50., 40.]]), labels=torch.tensor([0]),
                                       masks=BitmapMasks(mask, SIZE, SIZE))
    return [sample]


def record_dtypes(model: nn.Module) -> Dict[str, Counter]:
    """Hooks counting the dtypes of the linear layers' outputs and of the RoI layers' and NMS's inputs."""
    seen = dict(linear=Counter(), roi_align=Counter(), nms=Counter())
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.register_forward_hook(lambda _, __, output: seen['linear'].update([output.dtype]))
    for layer in model.roi_head.bbox_roi_extractor.roi_layers:
        layer.register_forward_pre_hook(lambda _, inputs: seen['roi_align'].update(x.dtype for x in inputs))
    return seen


@pytest.fixture
def nms_dtypes(monkeypatch) -> Counter:
    """The dtypes of the boxes and scores mmcv's NMS gets."""
    import importlib
    mmcv_nms = importlib.import_module('mmcv.ops.nms')  # mmcv.ops.nms is also the function's name
    seen, forward = Counter(), mmcv_nms.NMSop.forward

    def recording(ctx, boxes, scores, *args):
        seen.update([boxes.dtype, scores.dtype])
        return forward(ctx, boxes, scores, *args)

    monkeypatch.setattr(mmcv_nms.NMSop, 'forward', staticmethod(recording))
    return seen


def test_training_losses_under_bf16_autocast(nms_dtypes):
    model = build_detector().train()
    seen = record_dtypes(model)
    image = torch.rand(1, 3, SIZE, SIZE) * 255
    with float32_cpu_kernels(model), torch.autocast('cpu', dtype=torch.bfloat16):
        losses = model.loss(image, samples())
    assert set(seen['linear']) == {torch.bfloat16}  # the GEMMs ran in bf16
    assert set(seen['roi_align']) == {torch.float32} and set(nms_dtypes) == {torch.float32}
    total = sum(sum(value) if isinstance(value, list) else value for name, value in losses.items() if 'loss' in name)
    assert torch.isfinite(total)
    total.backward()
    assert all(param.grad.dtype == torch.float32 for param in model.parameters() if param.grad is not None)


def test_predictions_under_bf16_autocast_are_float32(nms_dtypes):
    model = build_detector().eval()
    seen = record_dtypes(model)
    with torch.no_grad(), float32_cpu_kernels(model), torch.autocast('cpu', dtype=torch.bfloat16):
        predictions = model.predict(torch.rand(1, 3, SIZE, SIZE) * 255, samples())
    assert set(seen['linear']) == {torch.bfloat16} and set(seen['roi_align']) == {torch.float32}
    assert set(nms_dtypes) == {torch.float32}
    assert predictions[0].pred_instances.bboxes.dtype == torch.float32


def test_without_the_block_mmcv_refuses_bf16_and_the_model_is_restored():
    model = build_detector().eval()
    with float32_cpu_kernels(model):
        pass
    assert not any('forward' in vars(module) or 'predict_by_feat' in vars(module) for module in model.modules())
    with torch.no_grad(), torch.autocast('cpu', dtype=torch.bfloat16), pytest.raises(RuntimeError):
        model.predict(torch.rand(1, 3, SIZE, SIZE) * 255, samples())

"""mmdeploy's torch -> ONNX conversion of an mmrmt model, made right, and checked against torch.

:func:`convert` is what mmdeploy's ``tools/deploy.py`` does for the
onnxruntime backend (``mmdeploy.apis.torch2onnx``; an onnxruntime backend
runs that file as it is), with mmrmt's rewriters registered
(:mod:`mmrmt.deployment.mmdeploy.rewriters`, the TorchScript exporter among
them) and, for a static deploy config, attention in runs of queries;
:func:`compare_with_torch` runs the file through mmdeploy's onnxruntime
backend model and the PyTorch model on one image and compares what each
predicts (:mod:`mmrmt.deployment.mmdeploy.parity`).

mmdeploy's detector graphs clip boxes, the RPN's proposals among them, to
their input: the image as the data preprocessor pads it. mmdet clips to the
image itself, so where padding is left the graph's boxes, proposals and the
detections built from them differ from torch's (13 of 20 detections of a
tiny Mask R-CNN on a 38x64 image padded to 64x64, with its post-processing
computed as mmdet's; box edges left in the padding by a RetinaNet);
:func:`input_not_filled` says so before anything is converted. With the
image resized to fill the input (``onnx_config.input_shape``) both clip at
the same edges.
"""
from contextlib import nullcontext
from typing import Optional

import torch
from mmengine.config import Config

from ..export import fixed_shape_export
from .parity import Parity, prediction_parity


def input_not_filled(deploy_cfg: Config, model_cfg: Config, image: str, device: str = 'cpu') -> Optional[str]:
    """Why a detector's graph would clip boxes elsewhere than torch on ``image`` (not filling the input), or None."""
    if deploy_cfg.codebase_config.type != 'mmdet':
        return None
    from mmdeploy.apis.utils import build_task_processor
    from mmdeploy.utils import get_input_shape
    processor = build_task_processor(model_cfg, deploy_cfg, device)
    data, inputs = processor.create_input(image, get_input_shape(deploy_cfg), processor.build_data_preprocessor())
    image_height, image_width = data['data_samples'][0].img_shape[:2]
    input_height, input_width = inputs.shape[-2:]
    if (image_height, image_width) == (input_height, input_width):
        return None
    return (f'the test pipeline makes {image} {image_height}x{image_width}, padded to a {input_height}x{input_width} '
            "input: mmdeploy's detector graphs clip boxes to their input, torch to the image, so their detections "
            f'would differ; set onnx_config.input_shape=[{input_width}, {input_height}] (width, height: the image is '
            'then resized to fill the input)')


def save_initialised_weights(deploy_cfg: Config, model_cfg: Config, path: str, device: str = 'cpu') -> None:
    """Save the weights of the model as mmdeploy builds it without a checkpoint (initialised), to ``path``.

    mmdeploy builds the model anew for each step, each time with other random
    weights: converting and checking one model takes one file of weights.
    """
    from mmdeploy.apis.utils import build_task_processor
    model = build_task_processor(model_cfg, deploy_cfg, device).build_pytorch_model(None)
    torch.save({'state_dict': model.state_dict()}, path)


def convert(deploy_cfg: Config, model_cfg: Config, image: str, work_dir: str, weights: Optional[str] = None,
            device: str = 'cpu') -> None:
    """Write ``onnx_config.save_file`` of ``deploy_cfg`` into ``work_dir`` (``mmdeploy.apis.torch2onnx``).

    A static deploy config (no ``onnx_config.dynamic_axes``) gives a graph of
    fixed shapes, whose attention computes its queries a few at a time
    (:func:`mmrmt.deployment.export.fixed_shape_export`).
    """
    from mmdeploy.apis import torch2onnx
    shapes = nullcontext() if deploy_cfg.onnx_config.get('dynamic_axes') else fixed_shape_export()
    with shapes:
        torch2onnx(image, work_dir, deploy_cfg.onnx_config.save_file, deploy_cfg, model_cfg, weights, device)


def compare_with_torch(deploy_cfg: Config, model_cfg: Config, graph_file: str, image: str,
                       weights: Optional[str] = None, device: str = 'cpu') -> Parity:
    """How the predictions of the graph (mmdeploy's backend model) differ from torch's on ``image``."""
    from mmdeploy.apis.utils import build_task_processor
    from mmdeploy.utils import get_input_shape
    processor = build_task_processor(model_cfg, deploy_cfg, device)
    torch_model = processor.build_pytorch_model(weights)
    graph_model = processor.build_backend_model([graph_file],
                                                data_preprocessor_updater=processor.update_data_preprocessor)
    inputs, _ = processor.create_input(image, get_input_shape(deploy_cfg))
    with torch.no_grad():
        torch_samples = torch_model.test_step(inputs)
        graph_samples = graph_model.test_step(inputs)
    return prediction_parity(torch_samples, graph_samples)

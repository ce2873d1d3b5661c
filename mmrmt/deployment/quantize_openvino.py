"""Static int8 quantisation of an exported graph for OpenVINO, with its own quantiser (nncf).

:func:`quantize_for_openvino` runs ``nncf.quantize`` (post-training, min-max
ranges with fast bias correction, OpenVINO's CPU scheme: int8 weights per
output channel; the ``MIXED`` preset: asymmetric activations, as
onnxruntime's quantiser has them; the ``TRANSFORMER`` model type: the inputs
of Conv, MatMul and Gemm quantised, not those of the element-wise sums --
the decay mask's large negative values -- or softmax) on the ONNX graph and writes an
int8 ONNX file in the QDQ format, which OpenVINO compiles into its int8
kernels. It keeps in float the same nodes as onnxruntime's quantiser
(:func:`.quantize.float_nodes`: attention's products of two activations,
the rotary's pair swaps, the layers producing graph outputs) and is
calibrated on the same feeds (:func:`.calibration.calibration_feeds`), so
the two int8 files differ only in the quantiser and the runtime.
"""
import logging
import os.path as osp
from typing import Dict, Iterable

import numpy as np

from .quantize import float_nodes


def quantize_for_openvino(source: str, destination: str, feeds: Iterable[Dict[str, np.ndarray]],
                          workspace: str) -> Dict[str, str]:
    """Write the int8 form of ``source`` for OpenVINO to ``destination``; return the nodes kept in float.

    Args:
        source (str): The float ONNX file.
        destination (str): Where to write the quantised ONNX file.
        feeds (Iterable[dict]): Calibration inputs of ``source`` (nncf reads
            them more than once: they are held in memory).
        workspace (str): A folder for the shape-inferred graph nncf needs.
    """
    import nncf
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = osp.join(workspace, 'prepared.onnx')
    # nncf's ONNX graph builder needs every edge's type: onnx's shape inference writes them
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
    model = onnx.load(prepared)
    kept = float_nodes(model)
    calibration = list(feeds)
    if not calibration:
        raise ValueError('no calibration feeds: give at least one image')
    logger = logging.getLogger('nncf')
    level = logger.level
    logger.setLevel(logging.WARNING)  # not a line for each node it leaves unquantised
    try:
        quantized = nncf.quantize(model, nncf.Dataset(calibration), subset_size=len(calibration),
                                  target_device=nncf.TargetDevice.CPU, preset=nncf.QuantizationPreset.MIXED,
                                  model_type=nncf.ModelType.TRANSFORMER,
                                  ignored_scope=nncf.IgnoredScope(names=list(kept), validate=False))
    finally:
        logger.setLevel(level)
    onnx.save(quantized, destination)
    return kept

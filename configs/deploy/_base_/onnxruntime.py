# What every mmrmt deploy config shares: mmdeploy's ONNX intermediate
# (TorchScript exporter, selected by tools/deployment/mmdeploy_deploy.py) and
# the onnxruntime backend, which runs the file as it is.
# opset 13: the first at which our export forms trace (ResT's chunking and
# RMT's head split); mmdeploy's onnx optimiser is off because the wheel's
# torchscript extension is not built for this torch (it would only warn).
onnx_config = dict(
    type='onnx',
    export_params=True,
    keep_initializers_as_inputs=False,
    opset_version=13,
    save_file='end2end.onnx',
    input_names=['input'],
    output_names=['output'],
    input_shape=None,
    optimize=False)
backend_config = dict(type='onnxruntime')

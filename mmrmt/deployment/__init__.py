"""Deployment of mmrmt models, in four sub-packages, each of which names its API in its ``__init__``:

* :mod:`.export`: the tensor-mode wrapper, ONNX export, the export forms of
  mmdet's layers, ``Scan`` over images and float32 RoI pooling
  (``tools/deployment/pytorch2onnx.py``);
* :mod:`.runtime`: exported graphs run in onnxruntime or OpenVINO (sessions,
  the CPU's features, image chunks), their predictions, their comparison
  with torch and their profiles (``test_onnx.py``, ``profile_onnx.py``,
  ``benchmark.py --onnx``);
* :mod:`.int8`: calibration images and int8 quantisation (``quantize_onnx.py``);
* :mod:`.mmdeploy`: mmdeploy's conversion route with mmrmt's rewriters and its
  prediction parity with torch (``mmdeploy_deploy.py``), the one sub-package
  that imports mmdeploy.

onnx, onnxruntime and onnxscript come with the ``deploy`` extra
(``pip install -e .[deploy]``), openvino with the ``openvino``
extra; they are imported only when used.
"""

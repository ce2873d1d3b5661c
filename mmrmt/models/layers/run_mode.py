"""How the forward being run runs: the one place the layers read torch's global modes.

The backbones' fast paths ask a few questions about the forward they are in;
this module answers them, and no layer reads torch's grad, tracing, export,
compile or autocast state itself. The eager classes ask
:func:`keeps_autograd`, :func:`traces_plain_ops`, :func:`is_compiling`,
:func:`chunks_cpu_inference` and :func:`autocast_dtype`; the questions about
an export (:func:`is_exporting`, :func:`exports_fixed_shapes`) are asked by
the layers' export forms only, which ``mmrmt.deployment.export`` swaps in
for an export.

* :func:`keeps_autograd`: autograd records the forward. Then the lean
  autograd Functions of ``norm_then_project``, RMT's FFN and ResT's MLP run
  (they keep less for backward), RMT's fast attention goes through SDPA,
  nothing is written in place, and ``with_cp`` checkpoints the blocks of a
  training module. Without it residual sums are written into the branch
  outputs, GELUs run in place and short attention sequences use explicit
  GEMMs.
* :func:`traces_plain_ops`: ``torch.jit.trace`` (FLOP counting) or an
  export records the forward. Then only plain torch ops, the ones a graph
  and a FLOP counter know (no autograd Functions, no hand-made kernels), and
  one graph for any batch (no image chunks).
* :func:`is_exporting`: ONNX export (either exporter) or ``torch.export``
  records the forward.
* :func:`exports_fixed_shapes`: an export records the forward inside
  :func:`fixed_shape_export` (mmrmt's exports of a fixed input size: every
  shape of the graph is a constant). Then attention computes its queries a
  few at a time (``mmrmt.deployment.export.plain_attention``): a runtime holds
  every tensor of a graph whole, and a graph of one detection-sized image
  would otherwise hold attention logits of hundreds of MB at once, which
  eager's fused attention never materialises. A graph that accepts other
  sizes cannot (the chunks' bounds would be the traced size's).
* :func:`is_compiling`: dynamo traces the forward (``torch.compile``,
  ``torch.export``); checks that read tensor values in Python are skipped.
* :func:`autocast_dtype`: the dtype autocast computes a tensor's matmuls
  in, None outside autocast.
* :func:`chunks_cpu_inference`: eval-mode inference on the CPU, without
  autograd, neither traced nor exported: a backbone may run images a few
  at a time (:func:`inference_chunk_images` at a time).

The matrix. Rows: training is train mode with grad; "no grad" is
``torch.no_grad()`` or ``torch.inference_mode()``; train mode without grad
is e.g. recomputing BatchNorm statistics; ``torch.jit.trace`` is what FLOP
counters run. Cells: ``-`` no; ``caller`` as the grad mode the caller runs
it in (mmrmt's ONNX export runs without grad); ``as eager`` as the same
forward run eagerly.

=========================  ==============  ================  ============  ============  ====================
Run                        keeps_autograd  traces_plain_ops  is_exporting  is_compiling  chunks_cpu_inference
=========================  ==============  ================  ============  ============  ====================
training                   yes             -                 -             -             -
eval, grad                 yes             -                 -             -             -
train mode, no grad        -               -                 -             -             -
eval, no grad, CPU         -               -                 -             -             yes
eval, no grad, GPU         -               -                 -             -             - (not the CPU)
torch.jit.trace            caller          yes               -             -             -
ONNX, TorchScript          caller          yes               yes           -             -
ONNX dynamo, torch.export  caller          yes               yes           yes           -
torch.compile              caller          -                 -             yes           as eager
=========================  ==============  ================  ============  ============  ====================

:func:`exports_fixed_shapes` answers as :func:`is_exporting` inside
:func:`fixed_shape_export` (``export_onnx`` without ``dynamic``, mmdeploy
conversions with a static deploy config) and no everywhere outside it.

Autocast (CUDA float16 / bfloat16, CPU bfloat16) is orthogonal to every row:
:func:`autocast_dtype` gives its dtype for tensors of its device type, and
the autograd Functions compute in it as autocast would.

Two combinations used to differ from site to site and are decided here once:

* Tracing is plain ops like exporting, everywhere. RMT's CPU image chunks
  ignored ``torch.jit.trace`` (ResT's honoured it): a trace without grad
  baked the traced batch's chunks into its graph, which then failed on
  batches of another chunk count. ``norm_then_project`` and RMT's FFN
  honoured jit tracing but not ``torch.export`` (nor, through it, the dynamo
  exporter), which with grad enabled captured their autograd Functions
  (ResT's MLP honoured both). A traced or exported graph has no backward to
  save memory for.
* Images are chunked in eval mode only. RMT's blocks were chunked in train
  mode without grad too (only its stem checked the mode; ResT checks it for
  everything): in train mode BatchNorm's statistics and drop path's random
  draws belong to the whole batch, so a train-mode forward is one function
  of the batch, with or without grad.
"""
from contextlib import contextmanager
from typing import Iterator, Optional

import torch

#: CPU inference runs a backbone's stem, blocks or stages on a few images at a
#: time, so that the largest map of a chunk stays under this many bytes: large
#: fresh tensors cost page faults on every allocation, small ones come back
#: from the heap and stay in cache.
INFERENCE_CHUNK_BYTES = 8 * 2**20


def keeps_autograd() -> bool:
    """True while autograd records the forward (``torch.is_grad_enabled()``)."""
    return torch.is_grad_enabled()


def is_exporting() -> bool:
    """True while ``torch.onnx.export`` (either exporter) or ``torch.export`` records the forward."""
    return torch.onnx.is_in_onnx_export() or torch.compiler.is_exporting()


#: Whether the exports being recorded write graphs of fixed shapes (see :func:`fixed_shape_export`): a
#: module global, which dynamo reads as a constant.
_fixed_shape_export = False


@contextmanager
def fixed_shape_export() -> Iterator[None]:
    """Within the context, an export records a graph of fixed shapes (see :func:`exports_fixed_shapes`).

    The exporter's caller knows whether the graph takes one input size only
    (no dynamic axes); the layers cannot tell it from the traced tensors.
    """
    global _fixed_shape_export
    outer, _fixed_shape_export = _fixed_shape_export, True
    try:
        yield
    finally:
        _fixed_shape_export = outer


def exports_fixed_shapes() -> bool:
    """True while an export (see :func:`is_exporting`) records a graph of fixed shapes, inside
    :func:`fixed_shape_export`."""
    return is_exporting() and _fixed_shape_export


def traces_plain_ops() -> bool:
    """True while ``torch.jit.trace`` or an export (see :func:`is_exporting`) records the forward."""
    return torch.jit.is_tracing() or is_exporting()


def is_compiling() -> bool:
    """True while dynamo traces the forward (``torch.compile``, ``torch.export``)."""
    return torch.compiler.is_compiling()


def autocast_dtype(x: torch.Tensor) -> Optional[torch.dtype]:
    """The dtype autocast computes matmuls of tensors on ``x``'s device type in; None outside autocast
    (and for device types autocast does not know, e.g. 'meta')."""
    device = x.device.type
    if not torch.amp.is_autocast_available(device) or not torch.is_autocast_enabled(device):
        return None
    return torch.get_autocast_dtype(device)


def chunks_cpu_inference(x: torch.Tensor, training: bool) -> bool:
    """Whether a module (in train mode if ``training``) may run the images of ``x`` a few at a time.

    True for eval-mode inference on the CPU without autograd, neither traced
    nor exported (see the module's matrix).
    """
    return not (training or keeps_autograd() or x.device.type != 'cpu' or traces_plain_ops())


def inference_chunk_images(bytes_per_image: int) -> int:
    """Images of a CPU-inference chunk whose largest map takes ``bytes_per_image`` an image: at least one."""
    return max(1, INFERENCE_CHUNK_BYTES // bytes_per_image)

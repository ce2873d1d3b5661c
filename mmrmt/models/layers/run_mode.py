"""How the forward being run runs: the one place the layers read torch's global modes.

The backbones' fast paths ask five questions about the forward they are in,
and no layer reads torch's grad, tracing, export or autocast state itself:

* :func:`records_graph`: ``torch.jit.trace``, either ONNX exporter or
  ``torch.export`` records the forward (and through them mmdeploy, a FLOP
  counter, ExecuTorch, AOTInductor). Then the fast classes compute in their
  graph forms (RMT's MaSA and relative position, ResT's attention): plain
  ops that every recorder knows and ONNX has (no complex numbers, cache,
  ``expm1``, autograd Function, ``out=`` or in-place write into a slice), the
  same function. So whoever records the model gets a graph that computes
  what eager computes, without any call of ours.
* :func:`compiles`: ``torch.compile`` traces the forward (not an export):
  RMT's FlexAttention form runs fused only there on the CPU.
* :func:`keeps_autograd`: autograd records the forward for a backward of
  it, so a graph recorded from it keeps none: it has no backward to save
  memory for. Then the lean autograd Functions of ``norm_then_project``, RMT's FFN
  and ResT's MLP run (they keep less for backward), RMT's fast attention
  goes through SDPA, nothing is written in place, and ``with_cp``
  checkpoints the blocks of a training module. Without it residual sums are
  written into the branch outputs, GELUs run in place and short attention
  sequences use explicit GEMMs.
* :func:`chunks_cpu_inference`: eval-mode inference on the CPU, without
  autograd, run eagerly (no graph recorded): a backbone may run images a few
  at a time (:func:`inference_chunk_images` at a time).
* :func:`autocast_dtype`: the dtype autocast computes a tensor's matmuls
  in, None outside autocast.

A graph recorded from the fast classes is thus their graph forms' inference
without image chunks. What a runtime needs beyond that is the deployment
side's (``mmrmt.deployment.export``): its forms take the fast classes'
place in a built model for our own exports and mmdeploy conversions, to
attend a few queries at a time in a graph of fixed shapes (which only the
exporter's caller knows it writes). It reads whether ``torch.export`` records the
forward here too (:func:`torch_exports`: one reading for every torch
supported, since torch before 2.14 answers ``torch.compiler.is_exporting()``
True inside ``torch.compile``).

The matrix. Rows: training is train mode with grad; "no grad" is
``torch.no_grad()`` or ``torch.inference_mode()``; train mode without grad
is e.g. recomputing BatchNorm statistics. Cells: ``-`` no; ``caller`` as
the grad mode the caller runs it in; ``as eager`` as the same forward run
eagerly.

=========================  =============  ========  ==============  ====================
Run                        records_graph  compiles  keeps_autograd  chunks_cpu_inference
=========================  =============  ========  ==============  ====================
training                   -              -         yes             -
eval, grad                 -              -         yes             -
train mode, no grad        -              -         -               -
eval, no grad, CPU         -              -         -               yes
eval, no grad, GPU         -              -         -               - (not the CPU)
torch.jit.trace            yes            -         -               -
ONNX, TorchScript          yes            -         -               -
ONNX dynamo, torch.export  yes            -         -               -
torch.compile              -              yes       caller          as eager
=========================  =============  ========  ==============  ====================

Autocast (CUDA float16 / bfloat16, CPU bfloat16) is orthogonal to every row:
:func:`autocast_dtype` gives its dtype for tensors of its device type, and
the autograd Functions compute in it as autocast would.

Four combinations used to differ from site to site and are decided here once:

* A recorded graph is of the graph forms, whoever records it. The forms
  were swapped in by our own tools only: any other exporter got the eager
  fast forms (ResT's through the TorchScript ONNX exporter a wrong graph,
  RMT's an error of torch's).

* A recorded graph keeps no autograd, everywhere. ``norm_then_project`` and
  RMT's FFN honoured jit tracing but not ``torch.export`` (nor, through it,
  the dynamo exporter), which with grad enabled captured their autograd
  Functions (ResT's MLP honoured both).
* A recorded graph has no image chunks. RMT's CPU image chunks ignored
  ``torch.jit.trace`` (ResT's honoured it): a trace without grad baked the
  traced batch's chunks into its graph, which then failed on batches of
  another chunk count.
* Images are chunked in eval mode only. RMT's blocks were chunked in train
  mode without grad too (only its stem checked the mode; ResT checks it for
  everything): in train mode BatchNorm's statistics and drop path's random
  draws belong to the whole batch, so a train-mode forward is one function
  of the batch, with or without grad.
"""
from typing import Optional

import torch

#: CPU inference runs a backbone's stem, blocks or stages on a few images at a
#: time, so that the largest map of a chunk stays under this many bytes: large
#: fresh tensors cost page faults on every allocation, small ones come back
#: from the heap and stay in cache.
INFERENCE_CHUNK_BYTES = 8 * 2**20


#: Whether ``torch.compiler.is_exporting()`` tells ``torch.export`` from ``torch.compile``: before torch
#: 2.14 dynamo answers it True in every graph it traces, compiled ones too (pytorch/pytorch#176347).
_IS_EXPORTING_TELLS_COMPILE_APART = torch.__version__ >= (2, 14)


@torch.compiler.assume_constant_result  # dynamo calls it as it traces, keeping the answer
def _dynamo_traces_an_export() -> bool:
    """True while dynamo traces the forward for a (strict) ``torch.export``, not for ``torch.compile``:
    the export flag of the frame it traces (torch before 2.14; called in dynamo's tracing only)."""
    from torch._dynamo.symbolic_convert import InstructionTranslator
    frame = InstructionTranslator.current_tx()
    return frame is not None and bool(frame.export)


def torch_exports() -> bool:
    """True while ``torch.export`` records the forward, strict (dynamo) or not, and with it the dynamo
    ONNX exporter; False in ``torch.compile``, on every torch we support.

    torch 2.14 and later: ``torch.compiler.is_exporting()``. Before, that answers True inside
    ``torch.compile`` too, and its flag is set by a non-strict export only: a strict export's dynamo
    trace is told by the export flag of the traced frame.
    """
    if _IS_EXPORTING_TELLS_COMPILE_APART:
        return torch.compiler.is_exporting()
    return torch.compiler._is_exporting_flag or (torch.compiler.is_compiling() and _dynamo_traces_an_export())


def records_graph() -> bool:
    """True while ``torch.jit.trace``, ONNX export (either exporter) or ``torch.export`` records the forward:
    the fast classes then compute in their graph forms (see the module's docstring)."""
    return torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or torch_exports()


def compiles() -> bool:
    """True while ``torch.compile`` traces the forward (not an export): a form that runs fused only where
    Inductor compiles it (RMT's FlexAttention on the CPU) asks this."""
    return torch.compiler.is_compiling() and not torch_exports()


def keeps_autograd() -> bool:
    """True while autograd records the forward for a backward of it: grad is enabled
    (``torch.is_grad_enabled()``) and no graph is recorded (see :func:`records_graph`)."""
    return torch.is_grad_enabled() and not records_graph()


@torch.compiler.assume_constant_result  # dynamo of torch 2.7 cannot trace the call: it calls it as it traces
def _autocast_available(device: str) -> bool:
    """Whether autocast knows the device type ``device`` (``torch.amp.is_autocast_available``; a device
    type's answer never changes)."""
    return torch.amp.is_autocast_available(device)


def autocast_dtype(x: torch.Tensor) -> Optional[torch.dtype]:
    """The dtype autocast computes matmuls of tensors on ``x``'s device type in; None outside autocast
    (and for device types autocast does not know, e.g. 'meta')."""
    device = x.device.type
    if not _autocast_available(device) or not torch.is_autocast_enabled(device):
        return None
    return torch.get_autocast_dtype(device)


def chunks_cpu_inference(x: torch.Tensor, training: bool) -> bool:
    """Whether a module (in train mode if ``training``) may run the images of ``x`` a few at a time.

    True for eval-mode inference on the CPU without autograd, run eagerly (see the module's matrix).
    """
    return not (training or torch.is_grad_enabled() or x.device.type != 'cpu' or records_graph())


def inference_chunk_images(bytes_per_image: int) -> int:
    """Images of a CPU-inference chunk whose largest map takes ``bytes_per_image`` an image: at least one."""
    return max(1, INFERENCE_CHUNK_BYTES // bytes_per_image)

"""Whether a forward pass is being captured for deployment rather than run."""
import torch


def is_exporting() -> bool:
    """True while ``torch.onnx.export`` (either exporter) or ``torch.export`` traces the model.

    Layers then take their export form: only ops that ONNX has (no complex
    numbers, no ``expm1``), with tables computed from the traced shapes
    instead of read from caches. Eager runs, ``torch.compile`` and the jit
    tracing of FLOP counting keep their eager kernels.
    """
    return torch.onnx.is_in_onnx_export() or torch.compiler.is_exporting()

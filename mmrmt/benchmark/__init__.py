"""Time and peak memory of a backbone or a config's whole model, per attention implementation
(``tools/analysis_tools/benchmark.py``).

Each (mode, implementation) pair runs in its own fresh worker process; the
workers of one mode live side by side and take turns, one iteration each,
so that every implementation sees the same machine load. Reported per pair:
the median seconds of the timed iterations (after warm-up), images per
second, and the peak memory the iterations added on top of the built model
and its input — on CPU the growth of the process's peak resident set
(``VmHWM``, reset after the build through ``/proc/self/clear_refs``), on
CUDA ``torch.cuda.max_memory_allocated`` over the allocation after the
build. Ratios compare each implementation with the reference one. ``process
peak MB`` is the worker's peak resident set over its whole life: its
imports, the build (for an exported file, the runtime's graph optimisation,
which folds what depends only on the input size into constants) and the
iterations.

``--impl`` compares the implementations of RMT and ResT (``fast``,
``reference``); ResMLP has one (``--impl fast`` or none). ResT is also compared
with the authors' code: with ``--upstream-repo PATH`` (a clone of the authors' wofmanaf/ResT) a
further worker runs their ResT (:mod:`.upstream_rest`)
with the same weights: the parent saves their freshly built model's state
dict, which our backbone loads through its checkpoint loader.

With ``--onnx FILE`` (infer mode, CPU) a further worker times the exported
file in onnxruntime, interleaved with the torch workers, which then run the
same tensor-mode forward on the same inputs (``mmrmt.deployment.export``: for
two-stage detectors 1000 given proposals instead of the RPN's decoding and
NMS) instead of ``predict``. A file of a dynamic batch (``pytorch2onnx.py
--dynamic``) runs the batch a few images at a time, as many as eager CPU
inference's chunk rule allows for the graph's largest tensor of an image
(``mmrmt.deployment.runtime.image_chunks``; the header says how many), a fixed one
the whole batch at once. ``--runtime onnxruntime openvino`` times each
file in each runtime; ``--precision f32 bf16`` adds torch's bf16 autocast
and OpenVINO's bf16 inference (CPUs with AVX-512 BF16 or AMX only; an int8
file runs int8 at either precision). The table then also gives each
contender's outputs' largest difference, relative to their largest value,
from the torch model's float32 row: with a config, that model holds the
weights ``pytorch2onnx.py`` exports without ``--weights`` (both drawn from
one seed: :func:`mmrmt.utils.build_seeded_model`), and with files of the
config's backbone (``--backbone-only``) the torch rows time that backbone;
a ``--backbone`` model is built alone, with other weights than any export.
Each file must be a graph of the model timed beside it
(:func:`.checks.check_graphs_fit`, test_onnx.py's check). The header names the CPU and the
flags that decide int8's and bf16's worth (AVX2, AVX-512F, VNNI, BF16, AMX).
"""
from .checks import backbone_graphs, check_args, check_onnx_inputs
from .models import save_upstream_weights
from .table import format_table, graph_batches
from .workers import time_contenders

__all__ = ['backbone_graphs', 'check_args', 'check_onnx_inputs', 'format_table', 'graph_batches',
           'save_upstream_weights', 'time_contenders']

"""mmrmt.models knows no runtime and no exporter's state: it is right by itself whoever records it. The
layers ask run_mode five questions, one of them whether a graph is recorded (``records_graph``: then the
fast classes compute in their graph forms, so any exporter or tracer gets a graph of what eager computes),
one whether torch.compile traces the forward (``compiles``: where RMT's FlexAttention form runs fused);
whether the graph is of fixed shapes, which runtime runs it, and every exporter's own state stay with the
deployment side (mmrmt.deployment.export), which only ever swaps in subclasses that split attention into
runs."""
import inspect
import re
from pathlib import Path

import mmrmt.models
from mmrmt.models.layers import run_mode

MODELS = Path(mmrmt.models.__file__).parent
#: Names of runtimes, and of the state of an export, a trace or a compile (which only run_mode reads).
FORBIDDEN = re.compile(r'onnxruntime|openvino|\bis_exporting\b|\bexports_fixed_shapes\b|\bfixed_shape_export\b'
                       r'|is_in_onnx_export|\bis_tracing\b|\bis_scripting\b|\bis_compiling\b|\btraces_plain_ops\b'
                       r'|\btorch_exports\b', re.IGNORECASE)
#: What the layers ask run_mode (besides its chunk size, inference_chunk_images).
QUESTIONS = {'records_graph', 'compiles', 'keeps_autograd', 'chunks_cpu_inference', 'autocast_dtype'}


def model_files():
    return [path for path in sorted(MODELS.rglob('*.py')) if path.name != 'run_mode.py']


def test_no_model_file_names_a_runtime_or_the_state_of_an_export_a_trace_or_a_compile():
    found = [f'{path.relative_to(MODELS)}:{number}: {line.strip()}' for path in model_files()
             for number, line in enumerate(path.read_text().splitlines(), 1) if FORBIDDEN.search(line)]
    assert found == []


def asked_questions(text: str) -> set:
    """The run_mode functions a module's text calls or imports."""
    names = set(re.findall(r'\brun_mode\.(\w+)\(', text))
    for imported in re.findall(r'from \.run_mode import ([\w, ]+)', text):
        names.update(name.strip() for name in imported.split(','))
    return names


def test_the_layers_ask_run_mode_only_its_five_questions():
    asked = set().union(*(asked_questions(path.read_text()) for path in model_files()))
    assert asked - {'inference_chunk_images'} == QUESTIONS


def test_run_mode_offers_only_its_five_questions():
    offered = {name for name, value in vars(run_mode).items()
               if inspect.isfunction(value) and value.__module__ == run_mode.__name__ and not name.startswith('_')}
    # torch_exports: torch.export's state read the same on every torch, for the deployment side's is_exporting
    assert offered - {'inference_chunk_images', 'torch_exports'} == QUESTIONS


def test_only_the_fast_classes_graph_forms_ask_whether_a_graph_is_recorded():
    """The question is asked where a fast class turns to its graph form (and where the FlexAttention form
    leaves a recorded graph to it, and where ResMLP crops its padding into a new tensor rather than a view),
    and nowhere else."""
    asking = sorted(str(path.relative_to(MODELS)) for path in model_files()
                    if 'records_graph' in asked_questions(path.read_text()))
    assert asking == ['backbones/resmlp.py', 'backbones/rest.py', 'backbones/rmt/fast_attention.py',
                      'backbones/rmt/flex_attention.py']

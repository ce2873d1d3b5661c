"""mmrmt.models knows no runtime and no export form: those live in mmrmt.deployment.export, which swaps
the backbones' layers for their export forms (export_implementation), and the eager classes ask run_mode
only what eager code needs."""
import re
from pathlib import Path

import mmrmt.models

MODELS = Path(mmrmt.models.__file__).parent
#: Names of runtimes, and run_mode's questions about an export that only export forms ask.
FORBIDDEN = re.compile(r'onnxruntime|openvino|\bis_exporting\b|\bexports_fixed_shapes\b|\bfixed_shape_export\b',
                       re.IGNORECASE)
#: What the eager classes ask run_mode (besides its chunk size, inference_chunk_images).
EAGER_QUESTIONS = {'keeps_autograd', 'traces_plain_ops', 'is_compiling', 'chunks_cpu_inference', 'autocast_dtype'}


def model_files():
    return [path for path in sorted(MODELS.rglob('*.py')) if path.name != 'run_mode.py']


def test_no_model_file_names_a_runtime_or_an_export_question():
    found = [f'{path.relative_to(MODELS)}:{number}: {line.strip()}' for path in model_files()
             for number, line in enumerate(path.read_text().splitlines(), 1) if FORBIDDEN.search(line)]
    assert found == []


def asked_questions(text: str) -> set:
    """The run_mode functions a module's text calls or imports."""
    names = set(re.findall(r'\brun_mode\.(\w+)\(', text))
    for imported in re.findall(r'from \.run_mode import ([\w, ]+)', text):
        names.update(name.strip() for name in imported.split(','))
    return names


def test_the_eager_classes_ask_run_mode_only_the_eager_questions():
    asked = set().union(*(asked_questions(path.read_text()) for path in model_files()))
    assert asked - {'inference_chunk_images'} == EAGER_QUESTIONS

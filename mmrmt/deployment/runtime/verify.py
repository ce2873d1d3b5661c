"""Run an exported file in onnxruntime or OpenVINO and compare it with the torch model."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..export.tensor_mode import TensorModeModel, random_proposals
from .graph_session import open_graph
from .onnxruntime_session import run_session


def relative_difference(expected: Sequence[torch.Tensor], actual: Sequence[np.ndarray]) -> float:
    """The largest of max|actual - expected| / max|expected| over the outputs.

    Raises:
        ValueError: If the outputs differ in number or shape.
    """
    if len(expected) != len(actual):
        raise ValueError(f'the graph returned {len(actual)} outputs, torch {len(expected)}')
    worst = 0.0
    for index, (reference, result) in enumerate(zip(expected, actual)):
        result = torch.from_numpy(result)
        if result.shape != reference.shape:
            raise ValueError(f'output {index}: the graph gave shape {tuple(result.shape)}, torch '
                             f'{tuple(reference.shape)}')
        if reference.numel():
            scale = reference.abs().max().clamp_min(torch.finfo(reference.dtype).tiny)
            worst = max(worst, float((result - reference).abs().max() / scale))
    return worst


def demo_image(height: int, width: int, mean: Sequence[float], std: Sequence[float],
               seed: int = 0) -> torch.Tensor:
    """A (1, 3, height, width) picture of the demo data set's kind, normalised by ``mean`` / ``std``."""
    import cv2

    from mmrmt.datasets.demo_data import place_shapes, textured_background
    rng = np.random.default_rng(seed)
    side = max(height, width)
    picture = textured_background(rng, side)
    place_shapes(rng, picture, 5, (side // 6, side // 2))
    picture = cv2.resize(picture, (width, height), interpolation=cv2.INTER_AREA).astype(np.float32)
    normalised = (picture - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return torch.from_numpy(normalised).permute(2, 0, 1)[None].contiguous()


def preprocessor_statistics(model: torch.nn.Module) -> Tuple[List[float], List[float]]:
    """The mean and std a model's data preprocessor normalises with (ImageNet's by default)."""
    preprocessor = getattr(model, 'data_preprocessor', None)
    if getattr(preprocessor, '_enable_normalize', False):
        return preprocessor.mean.flatten().tolist(), preprocessor.std.flatten().tolist()
    return [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]


def verification_inputs(model: TensorModeModel, sizes: Sequence[Tuple[int, int]],
                        batch: int = 1, seed: int = 0, picture_batch: int = 1,
                        min_proposal_side: float = 1.0) -> Dict[str, Tuple[torch.Tensor, ...]]:
    """A random batch and a demo picture (repeated ``picture_batch`` times) at each
    (height, width), keyed by a description; two-stage models get 40 random proposals with
    each, of sides at least ``min_proposal_side`` pixels."""
    generator = torch.Generator().manual_seed(seed)
    mean, std = preprocessor_statistics(model.model)
    inputs = {}
    for height, width in sizes:
        random_inputs = model.example_inputs(height, width, batch, generator, min_proposal_side)
        inputs[f'random {height}x{width}'] = random_inputs
        picture = demo_image(height, width, mean, std, seed).expand(picture_batch, -1, -1, -1).contiguous()
        extra = (random_proposals(40, height, width, generator, min_proposal_side), ) \
            if model.kind == 'two_stage' else ()
        inputs[f'demo picture {height}x{width}'] = (picture, *extra)
    return inputs


def compare_with_runtime(model: TensorModeModel, path: str, inputs: Dict[str, Tuple[torch.Tensor, ...]],
                         runtime: str = 'onnxruntime', precision: str = 'f32',
                         threads: Optional[int] = None) -> Dict[str, float]:
    """:func:`relative_difference` of ``path`` in ``runtime`` at ``precision`` from ``model`` in torch,
    per input."""
    session = open_graph(path, runtime, precision, threads)
    model.eval()
    differences = {}
    for description, tensors in inputs.items():
        with torch.no_grad():
            expected = model(*tensors)
        differences[description] = relative_difference(expected, run_session(session, tensors))
    return differences


def compare_with_onnxruntime(model: TensorModeModel, path: str,
                             inputs: Dict[str, Tuple[torch.Tensor, ...]]) -> Dict[str, float]:
    """:func:`compare_with_runtime` in onnxruntime, float32."""
    return compare_with_runtime(model, path, inputs)

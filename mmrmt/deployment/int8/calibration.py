"""Calibration inputs of a graph: images of a config's validation set (or a folder), as the model sees them."""
import logging
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from mmengine.config import Config
from torch import nn

IMAGE_SUFFIXES = ('.jpg', '.jpeg', '.png', '.bmp')


def folder_images(folder: str) -> list:
    """The image files of ``folder``, sorted."""
    return sorted(str(path) for path in Path(folder).iterdir() if path.suffix.lower() in IMAGE_SUFFIXES)


def readable_image(path: str) -> Optional[str]:
    """None if ``path`` decodes as an image to its last pixel, else why not (one line)."""
    from PIL import Image
    try:
        with Image.open(path) as image:
            image.load()
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    return None


def usable_images(folder: str, count: int) -> List[str]:
    """Up to ``count`` image files of ``folder`` that decode, sorted; each one that does not
    (corrupt, truncated) is skipped with a warning naming it.

    Raises:
        ValueError: None of its image files decodes, or it has none.
    """
    from mmengine.logging import print_log
    usable, skipped = [], []
    for path in folder_images(folder):
        if len(usable) == count:
            break
        problem = readable_image(path)
        if problem is None:
            usable.append(path)
        else:
            skipped.append(f'calibration: skipped {path}, not a readable image ({problem})')
    if not usable:
        found = f'its {len(skipped)} image file(s) are all unreadable' if skipped else (
            'it holds no .jpg, .jpeg, .png or .bmp file')
        raise ValueError(f'--images {folder}: {found}; give a folder of images to calibrate on')
    for warning in skipped:
        print_log(warning, logger='current', level=logging.WARNING)
    return usable


def preprocessed_images(cfg: Config, model: nn.Module, count: int,
                        paths: Optional[Sequence[str]] = None) -> Iterator[torch.Tensor]:
    """Up to ``count`` (1, 3, H, W) images through the validation pipeline and ``model``'s
    data preprocessor: from the config's validation set, or the image files ``paths``
    (e.g. :func:`usable_images`; the pipeline without its annotation loading)."""
    from mmengine.dataset import Compose, pseudo_collate
    from mmengine.registry import DATASETS, init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    dataset_cfg = cfg.val_dataloader.dataset
    if paths is None:
        dataset = DATASETS.build(dataset_cfg)
        items = (dataset[index] for index in range(min(count, len(dataset))))
    else:
        pipeline = Compose([step for step in dataset_cfg.pipeline if step['type'] != 'LoadAnnotations'])
        items = (pipeline(dict(img_path=path, img_id=index))
                 for index, path in enumerate(paths[:count]))
    with torch.no_grad():
        for item in items:
            yield model.data_preprocessor(pseudo_collate([item]), False)['inputs']


def fixed_size_batches(images: Iterator[torch.Tensor], shape) -> Iterator[torch.Tensor]:
    """Images resized to a graph's fixed (batch, 3, H, W) ``shape`` (None: any) and grouped into
    its batch size; a last, incomplete batch is dropped."""
    batch, _, height, width = shape
    group = []
    for image in images:
        if height is not None and width is not None and image.shape[-2:] != (height, width):
            image = F.interpolate(image, size=(height, width), mode='bilinear', align_corners=False)
        group.append(image)
        if len(group) == (batch or 1):
            yield torch.cat(group)
            group = []


def calibration_feeds(path: str, model: nn.Module, images: Iterator[torch.Tensor],
                      threads: Optional[int] = None) -> Iterator[Dict[str, np.ndarray]]:
    """Feeds of the graph at ``path`` for ``images``: images fitted to its input, and for a
    two-stage graph each image's RPN proposals, decoded by mmdet from the float graph."""
    from ..runtime.graph_predictor import GraphPredictor, proposal_feeds
    from ..runtime.onnxruntime_session import file_inputs
    inputs = file_inputs(path)
    batches = fixed_size_batches(images, inputs[0][1])
    if len(inputs) == 1:
        return ({inputs[0][0]: batch.numpy()} for batch in batches)
    predictor = GraphPredictor(model, path, threads)
    return (feeds for batch in batches for feeds in proposal_feeds(predictor, batch))

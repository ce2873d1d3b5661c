"""CPU inference a few images at a time: the one chunking rule of every backbone.

The rule: where :func:`.run_mode.chunks_cpu_inference` allows it (eval-mode
inference on the CPU, without autograd, neither traced nor exported), a
function that treats the images of a batch independently runs on chunks of
:func:`.run_mode.inference_chunk_images` images (the images whose largest map
fits :data:`.run_mode.INFERENCE_CHUNK_BYTES` together, at least one), in
batch order, the last chunk shorter; its outputs are concatenated. Otherwise
it runs on the whole batch at once. Each backbone states what one call
covers and which map is its largest: RMT's stem and each of its blocks (the
stem's first map, a block's FFN hidden map), ResT's stages (the MLP hidden
map).
"""
from typing import Callable

import torch

from .run_mode import chunks_cpu_inference, inference_chunk_images


def in_image_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, bytes_per_image: int,
                    training: bool) -> torch.Tensor:
    """``function(x)``, in CPU inference on as many images of ``x`` at a time as the chunk budget allows.

    Args:
        function (Callable): Maps a batch to a batch, each image on its own
            (as a module does in eval mode).
        x (torch.Tensor): The batch, images along dim 0.
        bytes_per_image (int): Bytes one image's largest map takes in
            ``function``.
        training (bool): Whether the module calling it is in train mode
            (then the batch is never split: BatchNorm's statistics and drop
            path's draws belong to the whole batch).
    """
    if not chunks_cpu_inference(x, training):
        return function(x)
    images = inference_chunk_images(bytes_per_image)
    if images >= x.shape[0]:
        return function(x)
    return torch.cat([function(part) for part in x.split(images)])

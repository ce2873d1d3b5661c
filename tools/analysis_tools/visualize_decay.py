"""Picture an RMT stage's Manhattan decay prior and the attention each head applies.

For one stage (and block) of the RMT backbone of CONFIG, one panel per head
in two rows, painted over the image:

* the decay prior relative to the query token, gamma_h ** (|dy| + |dx|) (the
  RMT paper's figure; gamma_h = exp(decay_h), the head's decay rate);
* the attention the head applies to the image at the query token:
  softmax(q k^T / sqrt(d) + log-decay) over all tokens of a full stage; for a
  decomposed stage the composed map of the column pass over the row passes,
  attn_col(query -> (y', qx)) * attn_row((y', qx) -> (y', x')), which is
  what the two passes weigh each token by.

Both are the backbone's own (``RMT.attention_maps``, from the block's real
inputs, with the fast or the reference MaSA alike); this tool only draws them.
The query is given in feature-map coordinates of the stage (default: its
centre).

    python tools/analysis_tools/visualize_decay.py CONFIG --image IMG --out PNG
        [--weights CKPT] [--stage S] [--block B] [--query Y X] [--max-size PX]
        [--force] [--cfg-options KEY=VALUE ...]

``--weights``: a checkpoint of the config's model (tools/train.py, the
model converters) or an RMT backbone file (e.g. the authors' ImageNet one);
without it the backbone keeps its initialisation (the decay prior is fixed by
the variant, the attention is random).
"""
import argparse
from pathlib import Path
from typing import List, Optional, Tuple

import cv2
import numpy as np
import torch
from torch import nn

from mmrmt.apis import read_image as read_image_file
from mmrmt.atomic_file import replaced_atomically
from mmrmt.checkpoint import extract_state_dict, load_model_weights
from mmrmt.models.backbones import RMT
from mmrmt.models.backbones.rmt.attention_maps import AttentionMaps
from mmrmt.utils import (PreflightError, add_cfg_options, apply_cfg_options, build_cpu_model, check_new_file,
                         file_errors_as_tool_errors, read_config, read_run_checkpoint, run_main)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a config whose backbone is RMT')
    parser.add_argument('--image', required=True, help='the image to paint on')
    parser.add_argument('--out', required=True, help='the PNG to write')
    parser.add_argument('--weights', help='checkpoint of the model or of an RMT backbone')
    parser.add_argument('--stage', type=int, default=2, help='stage, 0-3 (default 2, stride 16)')
    parser.add_argument('--block', type=int, default=0, help='block of the stage (default 0)')
    parser.add_argument('--query', type=int, nargs=2, metavar=('Y', 'X'),
                        help='query token in feature-map coordinates of the stage (default: centre)')
    parser.add_argument('--max-size', type=int, default=640,
                        help='longer image side fed to the backbone, in pixels (larger images are shrunk)')
    parser.add_argument('--force', action='store_true', help='replace an existing --out')
    add_cfg_options(parser, example='model.backbone.impl=reference')
    return parser.parse_args(argv)


# --- inputs ------------------------------------------------------------------
def read_image(path: str, max_size: int) -> np.ndarray:
    """The image as BGR uint8, read as the image demo reads it (a truncated file
    is refused), its longer side at most ``max_size``."""
    image = read_image_file(Path(path))
    scale = max_size / max(image.shape[:2])
    if scale < 1:
        image = cv2.resize(image, (max(1, round(image.shape[1] * scale)), max(1, round(image.shape[0] * scale))),
                           interpolation=cv2.INTER_AREA)
    return image


def feature_size(height: int, width: int, stage: int) -> Tuple[int, int]:
    """The (h, w) of a stage's tokens: the stem halves twice, each downsampling once
    (3x3 stride-2 convs with padding 1: ceil)."""
    for _ in range(stage + 2):
        height, width = -(-height // 2), -(-width // 2)
    return height, width


def check_location(backbone: nn.Module, stage: int, block: int, query: Optional[Tuple[int, int]],
                   grid: Tuple[int, int]) -> Tuple[int, int]:
    """Fail unless stage, block and query exist; return the query (default the centre)."""
    if not isinstance(backbone, RMT):
        raise PreflightError(f'the config\'s backbone is {type(backbone).__name__}; this tool needs RMT')
    if not 0 <= stage < len(backbone.layers):
        raise PreflightError(f'--stage {stage} is out of range: RMT has stages 0-{len(backbone.layers) - 1}')
    depth = len(backbone.layers[stage].blocks)
    if not 0 <= block < depth:
        raise PreflightError(f'--block {block} is out of range: stage {stage} has blocks 0-{depth - 1}')
    if query is None:
        return grid[0] // 2, grid[1] // 2
    if not (0 <= query[0] < grid[0] and 0 <= query[1] < grid[1]):
        raise PreflightError(f'--query {query[0]} {query[1]} is outside stage {stage}\'s {grid[0]}x{grid[1]} '
                             f'feature map of this image; give 0 <= Y < {grid[0]} and 0 <= X < {grid[1]}')
    return tuple(query)


def load_weights(model: nn.Module, path: str, checkpoint: dict) -> None:
    """``checkpoint`` (read from ``path``) of the config's whole model (``backbone.*`` keys), loaded strictly; or a
    file of an RMT backbone alone (e.g. the authors' ImageNet one), loaded as its ``init_cfg`` would."""
    if any(key.startswith('backbone.') for key in extract_state_dict(checkpoint, path)):
        load_model_weights(model, checkpoint, path)
    else:
        model.backbone.init_cfg = dict(type='Pretrained', checkpoint=path)
        model.backbone.init_weights()


def image_tensor(image: np.ndarray, preprocessor: nn.Module) -> torch.Tensor:
    """(1, 3, H, W) normalised as the config's data preprocessor does (mmdet's and
    mmseg's name their BGR-to-RGB switch differently)."""
    pixels = torch.from_numpy(image).permute(2, 0, 1).float()
    if getattr(preprocessor, '_channel_conversion', getattr(preprocessor, 'channel_conversion', False)):
        pixels = pixels[[2, 1, 0]]
    return ((pixels - preprocessor.mean) / preprocessor.std)[None]


# --- the picture ---------------------------------------------------------------
def paint(image: np.ndarray, maps: AttentionMaps, title: str, path: str) -> None:
    """Two rows of panels (decay prior, attention of the first image), one column per head, over the image."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    heads = maps.decay.shape[0]
    rgb = image[..., ::-1]
    height, width = image.shape[:2]
    grid_h, grid_w = maps.decay.shape[1:]
    # token centres in image pixels
    qy = (maps.query[0] + 0.5) * height / grid_h
    qx = (maps.query[1] + 0.5) * width / grid_w
    figure, axes = plt.subplots(2, heads, figsize=(2.2 * heads, 4.8), squeeze=False)
    rows = (('decay prior', maps.decay), ('attention', maps.attention[0]))
    for row, (name, values) in enumerate(rows):
        for head in range(heads):
            axis = axes[row][head]
            panel = values[head].numpy()
            axis.imshow(rgb, extent=(0, width, height, 0))
            axis.imshow(panel / max(panel.max(), 1e-12), cmap='jet', alpha=0.55, vmin=0, vmax=1,
                        extent=(0, width, height, 0), interpolation='nearest')
            axis.plot(qx, qy, marker='+', color='white', markersize=10, markeredgewidth=2)
            detail = f', γ={maps.gammas[head]:.4f}' if row == 0 else ''
            axis.set_title(f'head {head}: {name}{detail}', fontsize=8)
            axis.axis('off')
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    with replaced_atomically(path) as temporary:
        figure.savefig(temporary, format='png', dpi=100)
    plt.close(figure)


def main(argv: Optional[List[str]] = None) -> AttentionMaps:
    args = parse_args(argv)
    cfg = apply_cfg_options(read_config(args.config), args.cfg_options)
    checkpoint = read_run_checkpoint(args.weights, '--weights', remote_ok=False) if args.weights else None
    if args.max_size < 1:
        raise PreflightError(f'--max-size is the longer image side in pixels: give at least 1 (default 640), got '
                             f'{args.max_size}')
    if not args.out.lower().endswith('.png'):
        raise PreflightError(f'--out must name a .png file, got {args.out}')
    check_new_file(args.out, '--out', args.force,
                   inputs=[('--image', args.image), ('the config', args.config), ('--weights', args.weights)])
    image = read_image(args.image, args.max_size)
    model = build_cpu_model(cfg)
    grid = feature_size(*image.shape[:2], args.stage)
    query = check_location(model.backbone, args.stage, args.block, args.query, grid)
    if args.weights:
        with file_errors_as_tool_errors():
            load_weights(model, args.weights, checkpoint)
    with torch.no_grad():
        maps = model.backbone.attention_maps(image_tensor(image, model.data_preprocessor), args.stage, args.block,
                                             query)
    kind = 'decomposed' if model.backbone.layers[args.stage].blocks[args.block].retention.decomposed else 'full'
    paint(image, maps, f'RMT stage {args.stage} ({grid[0]}x{grid[1]} tokens, {kind} MaSA), block {args.block}, '
          f'query ({query[0]}, {query[1]})', args.out)
    print(f'{args.out}: {maps.decay.shape[0]} heads of stage {args.stage}, query {query}')
    return maps


if __name__ == '__main__':
    run_main(main)

"""Classify your own images with the authors' RMT or ResT ImageNet classifier (a timm model of mmrmt).

    python demo/classify_demo.py IMAGES... --model rmt_s --weights FILE [--topk 5] [--device cpu]

IMAGES are image files, folders (their images) or quoted glob patterns.
``--model`` is one of mmrmt's timm models (``rmt_t``, ``rmt_s``, ``rmt_b``,
``rmt_l``, the token-labelled ``rmt_s_tl``, ``rmt_b_tl``, ``rmt_l_tl``,
``rest_lite``, ``rest_small``, ``rest_base``, ``rest_large``); ``--weights``
is the authors' ImageNet checkpoint of that model (``.pth``, as they publish
it, or ``.safetensors``), loaded whole and strictly, weights only. Each image
goes through the model's own evaluation transform (its ``pretrained_cfg``:
resize, centre crop, mean and std, interpolation, by
``timm.data.resolve_data_config`` and ``create_transform``); for each one the
``--topk`` ImageNet classes are printed with their probabilities, indices,
WordNet ids and names (``timm.data.ImageNetInfo``). Images are read as
``image_demo.py`` reads them (:func:`mmrmt.apis.read_image`: a 16-bit PNG
scaled to 8 bits). Every input is checked first: a missing, undecodable or
too large image (a decompression bomb), a device torch does not have, a model
name that is not ours, a missing weights file or one of another model (or of
integers: a quantised file) is one ``error:`` line.
"""
import argparse
from pathlib import Path
from typing import Dict, List

import timm
import torch
from PIL import Image
from timm.data import ImageNetInfo, create_transform, resolve_data_config

import mmrmt  # noqa: F401  (registers the timm models)
from mmrmt.apis import collect_images, read_image
from mmrmt.utils import PreflightError, check_device, file_errors_as_tool_errors, run_main

#: mmrmt's timm models.
MODEL_NAMES = timm.list_models(['rmt*', 'rest*'])


def parse_args(argv: List[str] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('images', nargs='+', help='image files, folders of images or (quoted) glob patterns')
    parser.add_argument('--model', required=True, help=f'the model: {", ".join(MODEL_NAMES)}')
    parser.add_argument('--weights', required=True, help="the model's ImageNet checkpoint (.pth or .safetensors)")
    parser.add_argument('--topk', type=int, default=5, help='classes printed per image (1-1000)')
    parser.add_argument('--device', default='cpu', help="'cpu', 'cuda', 'cuda:1'...")
    return parser.parse_args(argv)


def read_images(inputs: List[str]) -> Dict[Path, Image.Image]:
    """Every image of ``inputs``, decoded to 8-bit RGB (a :class:`PreflightError` for a missing, too large or
    undecodable one)."""
    return {path: Image.fromarray(read_image(path, channel_order='rgb'))
            for item in inputs for path in collect_images(item)}


def build_classifier(name: str, weights: str, device: str) -> torch.nn.Module:
    """``name`` with the ImageNet ``weights``, in eval mode on ``device`` (a :class:`PreflightError` for another
    model's name, or missing, unreadable or another model's weights)."""
    if name not in MODEL_NAMES:
        raise PreflightError(f'--model {name} is not one of mmrmt\'s timm models: {", ".join(MODEL_NAMES)}')
    with file_errors_as_tool_errors():
        model = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=weights))
    return model.to(device).eval()


def top_classes(model: torch.nn.Module, images: Dict[Path, Image.Image], topk: int, device: str) -> List[str]:
    """The lines printed: for each image its name, then one line per class of the ``topk`` most probable."""
    transform = create_transform(**resolve_data_config({}, model=model))
    info = ImageNetInfo()
    lines = []
    for path, image in images.items():
        with torch.no_grad():
            probabilities = model(transform(image).unsqueeze(0).to(device)).softmax(dim=1)[0]
        values, indices = probabilities.topk(topk)
        lines.append(f'{path}:')
        lines.extend(f'  {value:.4f}  {index:4d}  {info.index_to_label_name(index)}  '
                     f'{info.index_to_description(index)}'
                     for value, index in zip(values.tolist(), indices.tolist()))
    return lines


def main(argv: List[str] = None) -> List[str]:
    args = parse_args(argv)
    if not 1 <= args.topk <= 1000:
        raise PreflightError(f'--topk must be in 1-1000 (the ImageNet classes), got {args.topk}')
    check_device(args.device)
    images = read_images(args.images)
    model = build_classifier(args.model, args.weights, args.device)
    lines = top_classes(model, images, args.topk, args.device)
    print('\n'.join(lines))
    return lines


if __name__ == '__main__':
    run_main(main)

"""A small synthetic dataset that trains detectors and segmentors in minutes on a CPU.

``make_demo_data(root)`` draws, deterministically and in a few seconds:

* ``root/coco``: a COCO-format instance set of textured circles, squares and
  triangles (1-4 per image, partly occluding each other) over textured
  backgrounds. Masks are the visible parts of the shapes (RLE), boxes their
  bounding boxes. Layout::

      coco/annotations/instances_train.json, instances_val.json
      coco/train/*.jpg, coco/val/*.jpg

* ``root/ade``: an ADE20K-format semantic set of the same shapes over a sky
  and a ground region. Label maps follow ADE20K's convention: ``0`` marks
  unlabelled pixels (here a one-pixel seam along every region boundary),
  ``k`` the k-th name of :data:`DEMO_SEG_CLASSES`, so configs use
  ``reduce_zero_label=True``. Layout::

      ade/images/{training,validation}/*.jpg
      ade/annotations/{training,validation}/*.png

A finished set is recorded by a stamp file in its folder; calling again with
the same generator version does nothing. The COCO masks are encoded with
pycocotools, which comes with mmdet: where only mmsegmentation is installed,
just the ADE20K set is drawn.
"""
import json
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import cv2
import numpy as np

DEMO_DET_CLASSES = ('circle', 'square', 'triangle')
DEMO_SEG_CLASSES = ('sky', 'ground', 'circle', 'square', 'triangle')

IMAGE_SIZE = 128
SPLIT_SIZES = {'coco': {'train': 320, 'val': 48}, 'ade': {'training': 200, 'validation': 40}}
MIN_VISIBLE_FRACTION = 0.5
VERSION = 'demo-data-v1'
STAMP_NAME = '.demo_data_complete'

# Mean RGB colour of each shape; every instance jitters it.
SHAPE_COLOURS = {'circle': (210, 60, 50), 'square': (60, 175, 70), 'triangle': (55, 90, 210)}

Image = np.ndarray  # (H, W, 3) uint8 RGB
Mask = np.ndarray  # (H, W) bool


def smooth_noise(rng: np.random.Generator, size: int, cell: int) -> np.ndarray:
    """A float map in [0, 1] varying smoothly over ``cell`` pixels."""
    coarse = rng.random((size // cell + 2, size // cell + 2)).astype(np.float32)
    return np.clip(cv2.resize(coarse, (size, size), interpolation=cv2.INTER_CUBIC), 0, 1)


@lru_cache(maxsize=None)
def pixel_grid(size: int, dtype: type) -> np.ndarray:
    """``np.mgrid[0:size, 0:size]`` as ``dtype``, made once per size (read-only)."""
    grid = np.mgrid[0:size, 0:size].astype(dtype)
    grid.flags.writeable = False
    return grid


def stripes(rng: np.random.Generator, size: int, period: float) -> np.ndarray:
    """A float map in [0, 1] of parallel stripes at a random angle."""
    angle = rng.uniform(0, np.pi)
    ys, xs = pixel_grid(size, np.float32)
    phase = (xs * np.cos(angle) + ys * np.sin(angle)) * 2 * np.pi / period
    return 0.5 + 0.5 * np.sin(phase + rng.uniform(0, 2 * np.pi))


def dots(rng: np.random.Generator, size: int, period: float) -> np.ndarray:
    """A float map in [0, 1] of a regular grid of soft dots."""
    ys, xs = pixel_grid(size, np.float32)
    offset = rng.uniform(0, period, size=2)
    wave_y = np.cos((ys + offset[0]) * 2 * np.pi / period)
    wave_x = np.cos((xs + offset[1]) * 2 * np.pi / period)
    return np.clip(wave_y * wave_x, 0, 1)


def checker(rng: np.random.Generator, size: int, period: float) -> np.ndarray:
    """A float map in {0, 1} of a checkerboard."""
    ys, xs = pixel_grid(size, np.int64)
    offset = rng.integers(0, int(period), size=2)
    return (((ys + offset[0]) // (period / 2) + (xs + offset[1]) // (period / 2)) % 2).astype(np.float32)


SHAPE_TEXTURES: Dict[str, Callable[[np.random.Generator, int, float], np.ndarray]] = {
    'circle': dots, 'square': checker, 'triangle': stripes}


def textured_background(rng: np.random.Generator, size: int) -> Image:
    """A dull, low-saturation texture: smooth blotches, faint stripes, grain."""
    base = rng.uniform(70, 170) + rng.uniform(-15, 15, size=3)
    shade = 0.6 + 0.6 * smooth_noise(rng, size, int(rng.integers(12, 40)))
    texture = 1 + 0.15 * (stripes(rng, size, rng.uniform(6, 20)) - 0.5)
    image = base[None, None, :] * (shade * texture)[..., None]
    image += rng.normal(0, 6, size=image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def shape_mask(rng: np.random.Generator, name: str, size: int, extent: Tuple[int, int]) -> Mask:
    """The full (unoccluded) mask of one randomly placed, sized and rotated shape."""
    radius = rng.uniform(*extent) / 2
    centre = rng.uniform(radius, size - radius, size=2)
    canvas = np.zeros((size, size), np.uint8)
    if name == 'circle':
        cv2.circle(canvas, (int(round(centre[0])), int(round(centre[1]))), int(round(radius)), 1, -1)
    else:
        corners = 4 if name == 'square' else 3
        angles = rng.uniform(0, 2 * np.pi) + np.arange(corners) * 2 * np.pi / corners
        points = centre + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
        cv2.fillPoly(canvas, [np.round(points).astype(np.int32)], 1)
    return canvas.astype(bool)


def paint_shape(rng: np.random.Generator, image: Image, name: str, mask: Mask) -> None:
    """Fill ``mask`` of ``image`` with the shape's colour and texture, in place."""
    colour = np.clip(np.array(SHAPE_COLOURS[name]) + rng.uniform(-30, 30, size=3), 0, 255)
    pattern = SHAPE_TEXTURES[name](rng, image.shape[0], rng.uniform(5, 10))
    grain = rng.normal(0, 5, size=image.shape)  # drawn for every pixel, so that the random stream is the image's
    shaded = colour[None, :] * (0.65 + 0.35 * pattern[mask])[:, None] + grain[mask]
    image[mask] = np.clip(shaded, 0, 255).astype(np.uint8)


def place_shapes(rng: np.random.Generator, image: Image, count: int,
                 extent: Tuple[int, int]) -> List[Tuple[str, Mask]]:
    """Paint ``count`` shapes in order (later ones occlude earlier ones).

    Returns:
        list[tuple[str, ndarray]]: The name and visible mask of every shape
        that keeps at least ``MIN_VISIBLE_FRACTION`` of its area.
    """
    drawn: List[Tuple[str, Mask, int]] = []
    for _ in range(count):
        name = DEMO_DET_CLASSES[int(rng.integers(len(DEMO_DET_CLASSES)))]
        mask = shape_mask(rng, name, image.shape[0], extent)
        paint_shape(rng, image, name, mask)
        drawn = [(other, visible & ~mask, area) for other, visible, area in drawn]
        drawn.append((name, mask, int(mask.sum())))
    return [(name, visible) for name, visible, area in drawn
            if visible.sum() >= MIN_VISIBLE_FRACTION * area]


def write_jpeg(path: Path, image: Image) -> None:
    cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95])


def coco_annotation(mask: Mask, category_id: int, image_id: int, annotation_id: int) -> dict:
    from pycocotools import mask as mask_utils  # installed with mmdet
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    x, y, w, h = (float(v) for v in mask_utils.toBbox(rle))
    return dict(id=annotation_id, image_id=image_id, category_id=category_id,
                bbox=[x, y, w, h], area=float(mask_utils.area(rle)), iscrowd=0,
                segmentation=dict(size=[int(s) for s in rle['size']], counts=rle['counts'].decode()))


def make_coco_split(root: Path, split: int, name: str, count: int) -> None:
    """Draw the images of one COCO split and write its annotation file."""
    image_dir = root / 'coco' / name
    image_dir.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for index in range(count):
        rng = np.random.default_rng([split, index])
        image = textured_background(rng, IMAGE_SIZE)
        shapes = place_shapes(rng, image, int(rng.integers(1, 5)), (IMAGE_SIZE // 6, IMAGE_SIZE // 2.5))
        file_name = f'{name}_{index:04d}.jpg'
        write_jpeg(image_dir / file_name, image)
        image_id = index + 1
        images.append(dict(id=image_id, file_name=file_name, height=IMAGE_SIZE, width=IMAGE_SIZE))
        for shape, visible in shapes:
            annotations.append(coco_annotation(
                visible, DEMO_DET_CLASSES.index(shape) + 1, image_id, len(annotations) + 1))
    categories = [dict(id=i + 1, name=n) for i, n in enumerate(DEMO_DET_CLASSES)]
    ann_dir = root / 'coco' / 'annotations'
    ann_dir.mkdir(parents=True, exist_ok=True)
    (ann_dir / f'instances_{name}.json').write_text(
        json.dumps(dict(images=images, annotations=annotations, categories=categories)))


def sky_and_ground(rng: np.random.Generator, size: int) -> Tuple[Image, np.ndarray]:
    """A scene split by a wavy horizon; returns the image and its label map."""
    ys, xs = pixel_grid(size, np.float32)
    horizon = size * rng.uniform(0.3, 0.6) + size * 0.06 * np.sin(
        xs * 2 * np.pi / rng.uniform(size / 2, size * 2) + rng.uniform(0, 2 * np.pi))
    ground = ys >= horizon
    sky = np.array([120, 170, 235]) + rng.uniform(-20, 20, size=3)
    sky_image = sky[None, None, :] * (1 - 0.3 * ys / size)[..., None] + rng.normal(0, 3, (size, size, 3))
    soil = np.array([120, 100, 60]) + rng.uniform(-25, 25, size=3)
    grain = 0.7 + 0.5 * smooth_noise(rng, size, 6) + 0.1 * rng.normal(size=(size, size))
    ground_image = soil[None, None, :] * grain[..., None]
    image = np.where(ground[..., None], ground_image, sky_image)
    labels = np.where(ground, DEMO_SEG_CLASSES.index('ground') + 1, DEMO_SEG_CLASSES.index('sky') + 1)
    return np.clip(image, 0, 255).astype(np.uint8), labels.astype(np.uint8)


def unlabel_seams(labels: np.ndarray) -> np.ndarray:
    """Set to 0 (ADE20K's 'unlabelled') every pixel whose right or lower neighbour differs."""
    seam = np.zeros(labels.shape, bool)
    seam[:, :-1] |= labels[:, :-1] != labels[:, 1:]
    seam[:-1, :] |= labels[:-1, :] != labels[1:, :]
    return np.where(seam, 0, labels).astype(np.uint8)


def make_ade_split(root: Path, split: int, name: str, count: int) -> None:
    """Draw the images and label maps of one ADE20K-format split."""
    image_dir = root / 'ade' / 'images' / name
    label_dir = root / 'ade' / 'annotations' / name
    image_dir.mkdir(parents=True, exist_ok=True)
    label_dir.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        rng = np.random.default_rng([split, index])
        image, labels = sky_and_ground(rng, IMAGE_SIZE)
        for shape, visible in place_shapes(rng, image, int(rng.integers(1, 5)),
                                           (IMAGE_SIZE // 6, IMAGE_SIZE // 2.5)):
            labels[visible] = DEMO_SEG_CLASSES.index(shape) + 1
        stem = f'{name}_{index:04d}'
        write_jpeg(image_dir / f'{stem}.jpg', image)
        cv2.imwrite(str(label_dir / f'{stem}.png'), unlabel_seams(labels))


def foreign_data_problem(root: str) -> Optional[str]:
    """Why ``make_demo_data(root)`` must not write, or None: a ``coco/`` or ``ade/`` under ``root``
    that is not empty and carries no demo stamp (e.g. a user's real dataset), whose files drawing
    the demo sets would replace.

    Args:
        root (str): The folder that would receive ``coco/`` and ``ade/``.
    """
    folders = (Path(root) / dataset for dataset in SPLIT_SIZES)
    foreign = [str(folder) for folder in folders
               if folder.is_dir() and any(folder.iterdir()) and not (folder / STAMP_NAME).is_file()]
    if not foreign:
        return None
    return (f'{" and ".join(foreign)} already hold{"s" if len(foreign) == 1 else ""} files that are not the demo '
            'data (a dataset of yours?), which drawing it would overwrite: give a new or empty folder')


def make_demo_data(root: str = 'data/demo') -> None:
    """Generate the demo COCO and ADE20K sets under ``root`` unless already there.

    Deterministic: the same version of this module always draws the same
    pixels and annotations. Without pycocotools (an environment with
    mmsegmentation only) the COCO set is left out.

    Args:
        root (str): Folder receiving ``coco/`` and ``ade/``.

    Raises:
        ValueError: ``root`` has a ``coco/`` or ``ade/`` of other files
            (see :func:`foreign_data_problem`); nothing was written.
    """
    problem = foreign_data_problem(root)
    if problem is not None:
        raise ValueError(problem)
    root_path = Path(root)
    makers: Dict[str, Callable[[Path, int, str, int], None]] = dict(coco=make_coco_split, ade=make_ade_split)
    first_split = 0  # each split draws from its own random stream
    for dataset, splits in SPLIT_SIZES.items():
        stamp = root_path / dataset / STAMP_NAME
        drawable = dataset != 'coco' or find_spec('pycocotools') is not None
        if drawable and not (stamp.is_file() and stamp.read_text() == VERSION):
            for split, (name, count) in enumerate(splits.items(), start=first_split):
                makers[dataset](root_path, split, name, count)
            stamp.write_text(VERSION)
        first_split += len(splits)

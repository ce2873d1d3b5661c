"""The images a demo run reads and the files it writes, checked before any model is built.

:func:`collect_images` turns the user's INPUTS (an image, a folder or a glob
pattern) into a list of files; :func:`read_image` is the demos' one image
reader (8 bits a channel whatever the file holds: a 16-bit PNG is scaled, not
clipped; a decompression bomb is refused from its header);
:func:`read_image_sizes` decodes each one the way the inference pipeline
will; :func:`output_files` names the picture and the JSON file of each image
and refuses to replace existing files unless the caller forces it, or to
write into a path that is a file.
"""
import glob
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import mmcv
import numpy as np
from mmengine.config import Config
from PIL import Image

from mmrmt.atomic_file import replaced_atomically
from mmrmt.utils import PreflightError
from mmrmt.utils.output_guard import resolved

#: File endings read from a folder (a single file or a glob match is taken as it is).
IMAGE_SUFFIXES = ('.jpg', '.jpeg', '.png', '.bmp', '.tif', '.tiff', '.webp')

#: The largest image, and painted picture, the demos take: 8192x8192 pixels. A Mask R-CNN
#: pastes each of its (up to 100) masks at the image's full size, a byte a pixel: 6.7 GB here;
#: a PNG of more pixels may be a decompression bomb (PIL refuses 179M and warns from 89M).
MAX_PIXELS = 8192 * 8192


class OutputFiles(NamedTuple):
    """Where the results of one image go: ``vis/<image name>`` and ``preds/<stem>.json``."""
    picture: Path
    predictions: Path


def collect_images(inputs: str) -> List[Path]:
    """The image files ``inputs`` names, sorted.

    Args:
        inputs (str): An image file, a folder (its images, not recursive) or a
            glob pattern (``**`` recurses).

    Raises:
        PreflightError: Nothing exists at ``inputs``, or it holds no image.
    """
    path = Path(inputs)
    if path.is_file():
        return [path]
    if path.is_dir():
        images = sorted(item for item in path.iterdir()
                        if item.is_file() and item.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            raise PreflightError(f'no images ({", ".join(IMAGE_SUFFIXES)}) in folder {inputs}')
        return images
    if glob.has_magic(inputs):
        images = sorted(Path(match) for match in glob.glob(inputs, recursive=True)
                        if Path(match).is_file())
        if not images:
            raise PreflightError(f'no file matches {inputs}')
        return images
    raise PreflightError(f'input not found: {inputs} (give an image, a folder or a glob pattern)')


def decoded_image(image: Path) -> Tuple[Optional[np.ndarray], str]:
    """The image decoded as the inferencers' loaders decode it (``mmcv.imfrombytes``,
    BGR), or None and the reason in a few words."""
    try:
        decoded = mmcv.imfrombytes(image.read_bytes())
    except OSError as error:
        return None, f'cannot be read ({error.strerror})'
    except Exception:  # noqa: BLE001 (OpenCV raises cv2.error on some byte strings)
        decoded = None
    if decoded is None:
        return None, 'is not a decodable image (corrupt, truncated or another format)'
    return decoded, ''


def read_image(image: Path, channel_order: str = 'bgr') -> np.ndarray:
    """The image as the demos read it (:func:`decoded_image`: 8 bits a channel, a 16-bit
    file's values scaled by 1/256), after its header passed :func:`check_image_pixels`.

    Args:
        image (Path): The file.
        channel_order (str): 'bgr' (what the OpenMMLab pipelines take) or 'rgb'.

    Raises:
        PreflightError: It is too large, or cannot be read or decoded (a
            truncated JPEG included).
    """
    check_image_pixels(image)
    decoded, problem = decoded_image(image)
    if decoded is None:
        raise PreflightError(f'{image} {problem}')
    return np.ascontiguousarray(decoded[..., ::-1]) if channel_order == 'rgb' else decoded


def header_size(image: Path) -> Optional[Tuple[int, int]]:
    """(width, height) of ``image`` from its header, without decoding its pixels; None when
    PIL cannot read the header (the decoder then reports the file)."""
    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None  # the size is what is asked here
    try:
        with Image.open(image) as opened:
            return opened.size
    except Exception:  # noqa: BLE001 (PIL raises many kinds for a foreign file)
        return None
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def check_image_pixels(image: Path) -> None:
    """Fail, before it is decoded, if ``image``'s header declares more than :data:`MAX_PIXELS`
    (a decompression bomb: a small file that decodes to gigabytes).

    Raises:
        PreflightError: Naming the image, its size and what to do.
    """
    size = header_size(image)
    if size is not None and size[0] * size[1] > MAX_PIXELS:
        raise PreflightError(f'{image} is {size[0]}x{size[1]} pixels, more than the demo takes ({MAX_PIXELS:,} '
                             'pixels, e.g. 8192x8192); shrink it first')


def check_image_bounds(images: Sequence[Path], picture_scale: int) -> None:
    """Fail, before any image is decoded, if an image or its painted picture exceeds :data:`MAX_PIXELS`.

    Args:
        images (Sequence[Path]): The input images.
        picture_scale (int): How many times each picture is enlarged.

    Raises:
        PreflightError: Naming the image, its size and what to do.
    """
    for image in images:
        check_image_pixels(image)
        size = header_size(image)
        if size is None:
            continue
        width, height = size
        if width * height * picture_scale ** 2 > MAX_PIXELS:
            raise PreflightError(f'--picture-scale {picture_scale} would paint {image} ({width}x{height}) on '
                                 f'{width * picture_scale}x{height * picture_scale} pixels, more than '
                                 f'{MAX_PIXELS:,}: give at most {int((MAX_PIXELS / (width * height)) ** 0.5)}')


def read_image_sizes(images: Sequence[Path]) -> Tuple[Dict[Path, Tuple[int, int]], Dict[Path, str]]:
    """The (height, width) of each decodable image, and the problem of each other one.

    Images are decoded with :func:`decoded_image`, so an image that passes
    here loads in the pipeline too.
    """
    sizes, problems = {}, {}
    for image in images:
        decoded, problem = decoded_image(image)
        if decoded is None:
            problems[image] = problem
        else:
            sizes[image] = decoded.shape[:2]
    return sizes, problems


def pipeline_resize_steps(cfg: Config) -> List[dict]:
    """The ``Resize`` steps (mmcv's, mmdet's, mmseg's) of the config's test pipeline,
    which the inferencers run on every image."""
    pipeline = cfg.get('test_dataloader', {}).get('dataset', {}).get('pipeline', [])
    return [step for step in pipeline if str(step.get('type', '')).split('.')[-1] == 'Resize']


def resized(width: int, height: int, step: dict) -> Tuple[int, int]:
    """The (width, height) ``step`` gives an image of that size, as mmcv's ``Resize`` computes it."""
    scale, keep_ratio = step.get('scale'), step.get('keep_ratio', False)
    if scale is None:
        factor = step.get('scale_factor')
        factors = factor if isinstance(factor, (tuple, list)) else (factor, factor)
        scale = tuple(int(side * f + 0.5) for side, f in zip((width, height), factors))
    scale = (scale, scale) if isinstance(scale, int) else tuple(scale)
    return tuple(mmcv.rescale_size((width, height), scale)) if keep_ratio else scale


def check_test_scale(cfg: Config, sizes: Dict[Path, Tuple[int, int]]) -> None:
    """Fail if the test pipeline's resizing leaves an image without a row or column.

    Args:
        cfg (Config): The config whose test pipeline the inferencer runs.
        sizes (dict): (height, width) of each image (:func:`read_image_sizes`).

    Raises:
        PreflightError: An image of extreme shape (e.g. 10000x50 pixels) that
            a small test scale shrinks to zero pixels across.
    """
    for image, (height, width) in sizes.items():
        new_width, new_height = width, height
        for step in pipeline_resize_steps(cfg):
            new_width, new_height = resized(new_width, new_height, step)
        if min(new_width, new_height) < 1:
            raise PreflightError(
                f"{image} ({width}x{height} pixels) would be resized to {new_width}x{new_height} by the "
                f"config's test pipeline (Resize to {step.get('scale') or step.get('scale_factor')}); crop it "
                'to a less extreme shape, or use a config with a larger test scale')


def output_files(images: Sequence[Path], out_dir: Path, force: bool) -> Dict[Path, OutputFiles]:
    """The output files of each image, after checking that writing them destroys nothing.

    Args:
        images (Sequence[Path]): The input images.
        out_dir (Path): The output folder.
        force (bool): Replace existing output files.

    Raises:
        PreflightError: Two images share a file name stem (their outputs
            would collide), an output file is an input image (links resolved;
            whatever ``force`` says), or an output file exists and ``force`` is off.
    """
    outputs, owners = {}, {}
    inputs = {resolved(str(image)): image for image in images}
    for image in images:
        if image.stem in owners:
            raise PreflightError(f'{owners[image.stem]} and {image} would write the same output files '
                                 f'(same name stem {image.stem!r}); run them separately')
        owners[image.stem] = image
        outputs[image] = OutputFiles(out_dir / 'vis' / image.name,
                                     out_dir / 'preds' / f'{image.stem}.json')
    for path in (path for files in outputs.values() for path in files):
        if resolved(str(path)) in inputs:
            raise PreflightError(f'--out-dir {out_dir} would write {path}, the input image '
                                 f'{inputs[resolved(str(path))]}; a tool never writes over its inputs (not even '
                                 'with --force): choose another --out-dir')
    existing = [str(path) for files in outputs.values() for path in files if path.exists()]
    if existing and not force:
        more = f' and {len(existing) - 1} more' if len(existing) > 1 else ''
        raise PreflightError(f'output file exists: {existing[0]}{more}; pass --force to overwrite '
                             f'or choose another --out-dir')
    return outputs


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(str(path)) as temporary:
        Path(temporary).write_bytes(data)

"""The images a demo run reads and the files it writes, checked before any model is built.

:func:`collect_images` turns the user's INPUTS (an image, a folder or a glob
pattern) into a list of files; :func:`unreadable_images` decodes each one the
way the inference pipeline will; :func:`output_files` names the picture and
the JSON file of each image and refuses to replace existing files unless the
caller forces it.
"""
import glob
from pathlib import Path
from typing import Dict, List, NamedTuple, Sequence

import mmcv

from mmrmt.utils import PreflightError, replaced_atomically

#: File endings read from a folder (a single file or a glob match is taken as it is).
IMAGE_SUFFIXES = ('.jpg', '.jpeg', '.png', '.bmp', '.tif', '.tiff', '.webp')


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


def unreadable_images(images: Sequence[Path]) -> Dict[Path, str]:
    """The images that cannot be decoded, each with the reason in a few words.

    Images are decoded with ``mmcv.imfrombytes``, as the inferencers' loaders
    do, so an image that passes here loads in the pipeline too.
    """
    problems = {}
    for image in images:
        try:
            decoded = mmcv.imfrombytes(image.read_bytes())
        except OSError as error:
            problems[image] = f'cannot be read ({error.strerror})'
            continue
        except Exception:  # noqa: BLE001 (OpenCV raises cv2.error on some byte strings)
            decoded = None
        if decoded is None:
            problems[image] = 'is not a decodable image (corrupt, truncated or another format)'
    return problems


def output_files(images: Sequence[Path], out_dir: Path, force: bool) -> Dict[Path, OutputFiles]:
    """The output files of each image, after checking that writing them destroys nothing.

    Args:
        images (Sequence[Path]): The input images.
        out_dir (Path): The output folder.
        force (bool): Replace existing output files.

    Raises:
        PreflightError: Two images share a file name stem (their outputs
            would collide), or an output file exists and ``force`` is off.
    """
    outputs, owners = {}, {}
    for image in images:
        if image.stem in owners:
            raise PreflightError(f'{owners[image.stem]} and {image} would write the same output files '
                                 f'(same name stem {image.stem!r}); run them separately')
        owners[image.stem] = image
        outputs[image] = OutputFiles(out_dir / 'vis' / image.name,
                                     out_dir / 'preds' / f'{image.stem}.json')
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

"""Predictions on a user's images, painted and saved as JSON, through the libraries' inferencers.

Detection configs (``default_scope='mmdet'``) run through mmdet's
``DetInferencer``, segmentation configs (``'mmseg'``) through mmseg's
``MMSegInferencer``. Both are used for what they do well (building the model
and the test pipeline, batching, the forward pass, the visualizer); the files
are written here, one picture and one JSON file an image, atomically and
named after the image, which the inferencers' own output options do not do
(mmseg numbers its files, mmdet saves no predictions unless told to).

Used by ``demo/image_demo.py`` and by ``make demo`` (tools/misc/demo.py).
"""
import copy
import json
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import cv2
import numpy as np
from mmengine.config import Config
from mmengine.infer import BaseInferencer
from mmengine.structures import BaseDataElement
from mmengine.utils import ProgressBar

from mmrmt.checkpoint import load_model_weights
from mmrmt.utils import PreflightError, config_dataset_meta, replace_sync_bn_types
from mmrmt.utils.model_kind import config_scope
from .image_inputs import OutputFiles, write_atomically

#: Palette names besides the libraries' dataset names: the config's (or checkpoint's) palette.
CONFIG_PALETTE = 'none'


class ConfigMetaMixin:
    """Strict weights, and class names from the config when the checkpoint has none.

    The inferencers load a checkpoint leniently (a checkpoint of another model
    only logs warnings) and, without class names in it, fall back to COCO's or
    Cityscapes' names, which mislabel our models' predictions. Here the
    weights load through :func:`~mmrmt.checkpoint.load_model_weights` first
    (the inferencer's own load then copies the same tensors, with its reading
    of the checkpoint's class names and palette).
    """

    def _load_weights_to_model(self, model, checkpoint, cfg) -> None:
        if checkpoint is not None:
            try:
                load_model_weights(model, checkpoint, 'the --weights checkpoint')
            except ValueError as error:
                raise PreflightError(str(error)) from error
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', message='(weights is None|dataset_meta or class names)')
            super()._load_weights_to_model(model, checkpoint, cfg)
        if checkpoint is None or 'dataset_meta' not in checkpoint.get('meta', {}):
            model.dataset_meta.update(config_dataset_meta(cfg))


def inferencer_class(scope: str) -> type:
    """The inferencer of the config's scope (:func:`~mmrmt.utils.model_kind.config_scope`), with
    :class:`ConfigMetaMixin`."""
    if scope == 'mmdet':
        from mmdet.apis import DetInferencer
        return type('MMRMTDetInferencer', (ConfigMetaMixin, DetInferencer), {})
    from mmseg.apis import MMSegInferencer
    return type('MMRMTSegInferencer', (ConfigMetaMixin, MMSegInferencer), {})


def is_detection(inferencer: BaseInferencer) -> bool:
    return inferencer.scope == 'mmdet'


def resolve_palette(name: str, scope: str, num_classes: int) -> List[tuple]:
    """RGB colours of ``num_classes`` classes from a palette name.

    Args:
        name (str): 'random', or a dataset name known to the library of the
            scope (mmdet: 'coco', 'voc', 'citys'; mmseg: 'ade20k',
            'cityscapes', 'voc', ...).

    Raises:
        PreflightError: The name is unknown or its palette has too few colours.
    """
    if name == 'random':
        colours = np.random.default_rng(42).integers(0, 256, (num_classes, 3))
        return [tuple(int(c) for c in colour) for colour in colours]
    try:
        if scope == 'mmdet':
            from mmdet.visualization.palette import get_palette
            if name not in ('coco', 'voc', 'citys'):
                raise ValueError(name)
            colours = get_palette(name, 0)
        else:
            from mmseg.utils import get_palette
            colours = get_palette(name)
    except ValueError:
        raise PreflightError(f'unknown --palette {name!r}: give none, random or a dataset name of '
                             f'{scope} (mmdet: coco, voc, citys; mmseg: ade20k, cityscapes, voc, ...)')
    if len(colours) < num_classes:
        raise PreflightError(f'--palette {name} has {len(colours)} colours for {num_classes} classes')
    return [tuple(colour) for colour in colours[:num_classes]]


def build_inferencer(cfg: Config,
                     weights: Optional[str] = None,
                     device: Optional[str] = None,
                     palette: str = CONFIG_PALETTE) -> BaseInferencer:
    """mmdet's ``DetInferencer`` or mmseg's ``MMSegInferencer`` for ``cfg``.

    Args:
        cfg (Config): A detection or segmentation config.
        weights (str, optional): Checkpoint of the whole model; without one
            the model keeps its random initial weights.
        device (str, optional): 'cpu', 'cuda', 'cuda:1', ...; by default
            CUDA when available.
        palette (str): 'none' (the checkpoint's or the config's colours),
            'random' or a dataset name (see :func:`resolve_palette`).

    Raises:
        PreflightError: The config is neither mmdet's nor mmseg's, the
            checkpoint does not fit the model, or the palette is unknown.
    """
    cfg = copy.deepcopy(cfg)
    replace_sync_bn_types(cfg.get('model'))
    factory = inferencer_class(config_scope(cfg))
    inferencer = factory(model=cfg, weights=weights, device=device)
    inferencer.show_progress = False  # one progress bar, ours, over all images
    meta = inferencer.model.dataset_meta
    if palette != CONFIG_PALETTE:
        meta['palette'] = resolve_palette(palette, inferencer.scope, len(meta['classes']))
    return inferencer


def scale_prediction(prediction: BaseDataElement, factor: int) -> BaseDataElement:
    """A copy of an image's prediction enlarged ``factor`` times (boxes, masks, label map).

    ``prediction`` is left as it is: mmengine's ``clone`` copies only the top
    level, so each changed field is a new element of its own, never the
    prediction's (which is then saved, in pixels of the image).
    """
    scaled = prediction.clone()
    if 'pred_instances' in prediction:
        instances = prediction.pred_instances.clone()
        instances.bboxes = instances.bboxes * factor
        if 'masks' in instances:
            instances.masks = instances.masks.repeat_interleave(factor, 1).repeat_interleave(factor, 2)
        scaled.pred_instances = instances
    if 'pred_sem_seg' in prediction:
        labels = prediction.pred_sem_seg.data  # a new PixelData: its fields must keep one size
        scaled.pred_sem_seg = prediction.pred_sem_seg.new(
            data=labels.repeat_interleave(factor, 1).repeat_interleave(factor, 2))
    return scaled


def paint(inferencer: BaseInferencer, image: Path, prediction: BaseDataElement,
          score_thr: float, picture_scale: int) -> bytes:
    """The image with its prediction painted on, encoded in the image's format."""
    rgb = cv2.cvtColor(cv2.imread(str(image)), cv2.COLOR_BGR2RGB)
    if picture_scale != 1:
        rgb = cv2.resize(rgb, None, fx=picture_scale, fy=picture_scale, interpolation=cv2.INTER_CUBIC)
        prediction = scale_prediction(prediction, picture_scale)
    visualizer = inferencer.visualizer
    if is_detection(inferencer):
        visualizer.dataset_meta = inferencer.model.dataset_meta
        options = dict(pred_score_thr=score_thr)
    else:
        visualizer.set_dataset_meta(**inferencer.model.dataset_meta)
        options = dict(with_labels=True)
    visualizer.add_datasample(image.name, rgb, prediction, draw_gt=False, show=False, **options)
    painted = cv2.cvtColor(visualizer.get_image(), cv2.COLOR_RGB2BGR)
    return cv2.imencode(image.suffix or '.png', painted)[1].tobytes()


def prediction_record(inferencer: BaseInferencer, image: Path, prediction: BaseDataElement) -> dict:
    """The prediction as JSON-ready data.

    Detection: ``labels``, ``scores``, ``bboxes`` (x1, y1, x2, y2 in pixels of
    the image) and ``masks`` (COCO RLE) of every detection, as mmdet's
    ``DetInferencer.pred2dict`` gives them. Segmentation: ``sem_seg``, the
    label map (one class index a pixel, rows of the image).
    Both also carry ``image`` and the ``classes`` the labels index.
    """
    record = dict(image=str(image), classes=list(inferencer.model.dataset_meta['classes']))
    if is_detection(inferencer):
        record.update(inferencer.pred2dict(prediction))
    else:
        record['sem_seg'] = prediction.pred_sem_seg.data[0].cpu().numpy().tolist()
    return record


def predict_batch(inferencer: BaseInferencer, images: Sequence[Path]) -> List[BaseDataElement]:
    """The model's predictions for ``images``, one batch through the inferencer."""
    (batch, ) = inferencer.preprocess([str(image) for image in images], batch_size=len(images))
    if is_detection(inferencer):  # mmdet's preprocess pairs each batch with its inputs
        batch = batch[1]
    return inferencer.forward(batch)


def predict_images(inferencer: BaseInferencer,
                   outputs: Dict[Path, OutputFiles],
                   score_thr: float = 0.3,
                   batch_size: int = 1,
                   picture_scale: int = 1,
                   show_progress: bool = True) -> Dict[Path, int]:
    """Predict, paint and save every image of ``outputs``.

    Args:
        inferencer (BaseInferencer): From :func:`build_inferencer`.
        outputs (dict): Image -> its output files (see
            :func:`mmrmt.apis.image_inputs.output_files`).
        score_thr (float): Lowest score of a painted detection (the JSON
            file keeps every detection).
        batch_size (int): Images a forward pass.
        picture_scale (int): Paint on the image enlarged this many times
            (keeps labels legible on small images).
        show_progress (bool): Show a progress bar when there are several images.

    Returns:
        dict: Image -> painted detections (detection) or classes present
        in the label map (segmentation).
    """
    images = list(outputs)
    progress = ProgressBar(len(images)) if show_progress and len(images) > 1 else None
    shown = {}
    for start in range(0, len(images), batch_size):
        chunk = images[start:start + batch_size]
        for image, prediction in zip(chunk, predict_batch(inferencer, chunk)):
            files = outputs[image]
            write_atomically(files.picture, paint(inferencer, image, prediction, score_thr, picture_scale))
            record = prediction_record(inferencer, image, prediction)
            write_atomically(files.predictions, json.dumps(record).encode())
            shown[image] = (int((prediction.pred_instances.scores >= score_thr).sum())
                            if is_detection(inferencer) else len(prediction.pred_sem_seg.data.unique()))
            if progress is not None:
                progress.update()
    if progress is not None:
        print()  # mmengine's bar ends without a line break
    return shown

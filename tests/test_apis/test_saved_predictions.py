"""mmrmt.apis.predict_images saves the library's own predictions, in pixels of the image, whatever scale it
paints the pictures at: mmdet's DetInferencer and mmseg's MMSegInferencer called directly give the same."""
import json
from pathlib import Path
from typing import List

import cv2
import numpy as np
import pytest
import torch
from pycocotools import mask as mask_utils

from mmrmt.apis import output_files
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG

pytestmark = pytest.mark.slow  # builds both models and both libraries' inferencers
SIZE = 128  # the demo images' side


def model_weights_file(config: Path, folder: Path) -> Path:
    """A checkpoint of ``config``'s randomly initialised model, so that two inferencers share its weights."""
    from mmrmt.utils import build_cpu_model, read_config
    path = folder / 'random_model.pth'
    torch.save(dict(state_dict=build_cpu_model(read_config(str(config))).state_dict()), path)
    return path


def library_prediction(config: Path, weights: Path, image: Path):
    """The prediction of mmdet's DetInferencer / mmseg's MMSegInferencer for ``image``, called directly."""
    from mmdet.apis import DetInferencer
    from mmseg.apis import MMSegInferencer
    factory = DetInferencer if config == DET_CONFIG else MMSegInferencer
    inferencer = factory(model=str(config), weights=str(weights), device='cpu')
    inferencer.show_progress = False
    predictions = inferencer(str(image), return_datasamples=True)
    return predictions['predictions'][0] if isinstance(predictions, dict) else predictions


def saved_predictions_at_scales(config: Path, weights: Path, image: Path, folder: Path) -> List[dict]:
    """The JSON records ``predict_images`` saves for ``image`` painted at picture scales 1, 2 and 3
    (with a score threshold that paints all, most or none of the detections)."""
    from mmrmt.apis import build_inferencer, predict_images
    from mmrmt.utils import read_config
    inferencer = build_inferencer(read_config(str(config)), str(weights), device='cpu')
    records = []
    for scale, score_thr in ((1, 0.0), (2, 0.3), (3, 0.9)):
        outputs = output_files([image], folder / f'scale_{scale}', force=False)
        predict_images(inferencer, outputs, score_thr, picture_scale=scale, show_progress=False)
        assert cv2.imread(str(outputs[image].picture)).shape == (SIZE * scale, SIZE * scale, 3)
        records.append(json.loads(outputs[image].predictions.read_text()))
    return records


def test_saved_detections_are_the_models_in_pixels_of_the_image(demo_root, tmp_path):
    """Painting enlarged pictures must not enlarge what is saved: the JSON's boxes and masks are
    the library's own prediction for the image at every picture scale. Both inferencers run the
    same weights on the same input in this process, the same float32 operations in the same
    order, so the values agree exactly (JSON holds a float32's value exactly)."""
    image = demo_root / 'coco' / 'val' / 'val_0001.jpg'
    weights = model_weights_file(DET_CONFIG, tmp_path)
    expected = library_prediction(DET_CONFIG, weights, image).pred_instances
    assert len(expected) > 0, 'the random model predicts nothing: the comparison would be empty'
    for record in saved_predictions_at_scales(DET_CONFIG, weights, image, tmp_path):
        assert record['labels'] == expected.labels.tolist() and record['scores'] == expected.scores.tolist()
        assert record['bboxes'] == expected.bboxes.tolist()
        masks = mask_utils.decode([dict(rle, counts=rle['counts'].encode()) for rle in record['masks']])
        assert np.array_equal(masks.transpose(2, 0, 1), expected.masks.numpy())


def test_saved_label_maps_are_the_models_in_pixels_of_the_image(demo_root, tmp_path):
    """As for detection: the saved label map is mmseg's own, image-sized, at every picture scale."""
    image = demo_root / 'ade' / 'images' / 'validation' / 'validation_0000.jpg'
    weights = model_weights_file(SEG_CONFIG, tmp_path)
    expected = library_prediction(SEG_CONFIG, weights, image).pred_sem_seg.data[0].numpy()
    assert expected.shape == (SIZE, SIZE)
    for record in saved_predictions_at_scales(SEG_CONFIG, weights, image, tmp_path):
        assert np.array_equal(np.array(record['sem_seg']), expected)

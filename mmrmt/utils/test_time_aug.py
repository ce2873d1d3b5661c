"""``tools/test.py --tta``: the config's model and test data set up for test-time augmentation."""
from mmengine.config import Config, ConfigDict

from .preflight import PreflightError, leaf_datasets


def use_test_time_aug(cfg: Config) -> None:
    """Wrap ``cfg.model`` in ``cfg.tta_model`` and test on ``cfg.tta_pipeline``.

    As mmdet's and mmseg's ``tools/test.py --tta``; our dataset bases define
    both keys (configs/_base_/datasets/coco_tta.py; mmseg's ade20k.py and
    default_runtime.py for segmentation).

    Raises:
        PreflightError: The config defines no ``tta_model`` or no ``tta_pipeline``.
    """
    missing = [key for key in ('tta_model', 'tta_pipeline') if not cfg.get(key)]
    if missing:
        raise PreflightError(f'--tta needs {" and ".join(missing)} in the config (as in '
                             f'configs/_base_/datasets/coco_tta.py or mmseg\'s ade20k.py)')
    cfg.model = ConfigDict(**cfg.tta_model, module=cfg.model)
    for dataset in leaf_datasets(cfg.test_dataloader.dataset):
        dataset.pipeline = cfg.tta_pipeline

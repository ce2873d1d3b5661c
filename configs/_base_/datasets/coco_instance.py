# mmdet's COCO instance-segmentation data, with the test-time augmentation of coco_tta.py.
_base_ = ['mmdet::_base_/datasets/coco_instance.py', './coco_tta.py']

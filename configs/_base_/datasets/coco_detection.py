# mmdet's COCO detection data, with the test-time augmentation of coco_tta.py.
_base_ = ['mmdet::_base_/datasets/coco_detection.py', './coco_tta.py']

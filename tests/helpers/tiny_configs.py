"""The tiny test configs (tests/data/configs): an RMT Mask R-CNN and UperNet that build and run in seconds."""
from pathlib import Path

TEST_CONFIGS = Path(__file__).resolve().parents[1] / 'data' / 'configs'
DET_CONFIG = TEST_CONFIGS / 'mask-rcnn_rmt-tiny_fpn_test.py'
SEG_CONFIG = TEST_CONFIGS / 'upernet_rmt-tiny_test.py'

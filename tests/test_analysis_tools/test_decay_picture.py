"""tools/analysis_tools/visualize_decay.py in-process: the decay prior and the applied attention per head (the tool
as a process: tests/tools/test_visualize_decay.py)."""
import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from mmrmt.models.backbones.rmt.attention_maps import AttentionMaps
from helpers.rounding import assert_close, one_computation, two_implementations
from helpers.tiny_configs import DET_CONFIG
from helpers.tool_modules import REPO, import_tool
from helpers.upstream_layouts import random_upstream_state_dict

visualize_decay = import_tool('tools/analysis_tools/visualize_decay.py')
pytestmark = pytest.mark.slow  # RMT detectors built, each test seconds

RMT_T_CONFIG = REPO / 'configs' / 'demo' / 'mask-rcnn_rmt-t_fpn_demo.py'
PANEL_WIDTH = 220  # pixels a head's column takes in the picture (2.2 inches at 100 dpi)


@pytest.fixture(scope='module')
def image(tmp_path_factory) -> str:
    """A 100x132 picture with some structure (stage 2 of it: 7x9 tokens)."""
    path = tmp_path_factory.mktemp('image') / 'picture.png'
    ys, xs = np.mgrid[0:100, 0:132]
    picture = np.stack([(xs * 2) % 256, (ys * 3) % 256, ((xs + ys) * 5) % 256], axis=-1).astype(np.uint8)
    cv2.imwrite(str(path), picture)
    return str(path)


def run(config, image, out, *options) -> AttentionMaps:
    return visualize_decay.main([str(config), '--image', image, '--out', str(out), *map(str, options)])


def manhattan(height: int, width: int, query) -> torch.Tensor:
    return torch.tensor([[abs(y - query[0]) + abs(x - query[1]) for x in range(width)] for y in range(height)],
                        dtype=torch.float)


def test_rmt_t_stage_picture_and_decay_values(image, tmp_path):
    out = tmp_path / 'decay.png'
    maps = run(RMT_T_CONFIG, image, out, '--stage', 2, '--query', 2, 5)
    heads, init_value, heads_range = 8, 2, 6  # RMT-T stage 2
    gammas = 1 - 2 ** (-init_value - heads_range * torch.arange(heads, dtype=torch.float64) / heads)
    # 1 - 2**(-x), its log (the decay parameter), exp: three roundings in float32
    assert torch.allclose(maps.gammas.double(), gammas, rtol=one_computation(torch.float32, 1, 3))
    assert maps.decay.shape == maps.attention.shape[1:] == (heads, 7, 9)
    distance = manhattan(7, 9, (2, 5))
    for head in range(heads):
        power = two_implementations(torch.float32, 1)  # one power each
        assert torch.allclose(maps.decay[head], maps.gammas[head] ** distance, rtol=power, atol=0)
        assert maps.decay[head, 2, 5] == 1
    # the softmax's normalisation and this sum, each over the 7 x 9 map
    assert torch.allclose(maps.attention.sum((2, 3)), torch.ones(1, heads), atol=two_implementations(torch.float32, 63))
    picture = cv2.imread(str(out))
    assert picture is not None and picture.shape[1] == heads * PANEL_WIDTH
    assert [p.name for p in tmp_path.iterdir()] == ['decay.png']


@pytest.mark.parametrize('stage', [1, 2], ids=['decomposed', 'full'])
def test_the_picture_draws_the_backbone_s_own_maps(stage, image, tmp_path):
    """What the tool returns and paints is ``RMT.attention_maps`` of the image, bit for bit."""
    out, weights = tmp_path / 'tool.png', tmp_path / 'model.pth'
    model = visualize_decay.build_cpu_model(Config.fromfile(str(DET_CONFIG)))
    torch.save({'state_dict': model.state_dict(), 'meta': {}}, weights)
    maps = run(DET_CONFIG, image, out, '--weights', weights, '--stage', stage, '--query', 3, 4)
    picture = visualize_decay.read_image(image, 640)
    with torch.no_grad():
        library = model.backbone.attention_maps(visualize_decay.image_tensor(picture, model.data_preprocessor),
                                                stage, 0, (3, 4))
    assert maps.query == library.query == (3, 4)
    for drawn, own in zip(maps[:3], library[:3]):
        assert torch.equal(drawn, own)
    title = f'RMT stage {stage} ({library.decay.shape[1]}x{library.decay.shape[2]} tokens, ' \
            f'{"decomposed" if stage == 1 else "full"} MaSA), block 0, query (3, 4)'
    visualize_decay.paint(picture, library, title, str(tmp_path / 'library.png'))
    assert np.array_equal(cv2.imread(str(out)), cv2.imread(str(tmp_path / 'library.png')))


def test_fast_and_reference_give_the_same_maps(image, tmp_path):
    weights = tmp_path / 'model.pth'
    torch.manual_seed(0)
    model = visualize_decay.build_cpu_model(Config.fromfile(str(DET_CONFIG)))
    torch.save({'state_dict': model.state_dict(), 'meta': {}}, weights)
    for stage in (1, 3):  # decomposed, full
        fast, reference = (run(DET_CONFIG, image, tmp_path / f'{impl}{stage}.png', '--weights', weights,
                               '--stage', stage, '--cfg-options', f'model.backbone.impl={impl}')
                           for impl in ('fast', 'reference'))
        # MaSA's 7 steps over the map's tokens (or the channels)
        tolerance = two_implementations(torch.float32, max(fast.attention[0, 0].numel(), 64), 7)
        assert_close(fast.attention, reference.attention, tolerance)
        assert torch.equal(fast.decay, reference.decay)


def test_backbone_weights_of_the_authors_load(image, tmp_path):
    """An upstream ImageNet file: its per-head decay is what the picture uses."""
    classifier = random_upstream_state_dict('rmt-t', seed=3)
    torch.save({'model': classifier}, tmp_path / 'rmt_t3.pth')
    maps = run(RMT_T_CONFIG, image, tmp_path / 'out.png', '--weights', tmp_path / 'rmt_t3.pth', '--stage', 1)
    # exp of the file's float32 decay: one rounding each
    exp = two_implementations(torch.float32, 1)
    assert torch.allclose(maps.gammas, classifier['layers.1.Relpos.decay'].exp(), rtol=exp)

"""demo/classify_demo.py in-process: the top ImageNet classes of a user's images through the model's own
evaluation transform; its own bad inputs are one line (a missing or unfitting weights file, a broken image or a
device torch does not see: the unit tests of mmrmt.checkpoint, mmrmt.apis, mmrmt.utils and
tests/test_models/test_classifiers/test_classifier_weights.py; the demo as a process: tests/tools/
test_classify_demo.py)."""
import re

import pytest
import torch
from PIL import Image

from helpers.classifier_goldens import seeded_state_dict
from helpers.images import grey16_png
from helpers.tool_modules import exit_line, import_tool

classify_demo = import_tool('demo/classify_demo.py')
pytestmark = pytest.mark.slow  # a ResT classifier built in each test


@pytest.fixture(scope='module')
def known_weights(tmp_path_factory) -> str:
    """ResT-Lite weights whose logits are known whatever the image: a zero classifier whose
    bias favours goldfish (1), then golden retriever (207), then tabby cat (281)."""
    state = {key: value.float() if value.is_floating_point() else value
             for key, value in seeded_state_dict('rest_lite', 0).items()}
    state['head.weight'] = torch.zeros_like(state['head.weight'])
    state['head.bias'] = torch.zeros(1000)
    state['head.bias'][[1, 207, 281]] = torch.tensor([3., 2., 1.])
    path = tmp_path_factory.mktemp('weights') / 'rest_lite.pth'
    torch.save({'model': state}, path)
    return str(path)


@pytest.fixture(scope='module')
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp('images')
    Image.new('RGB', (320, 240), (200, 120, 40)).save(folder / 'orange.jpg')
    Image.new('L', (100, 180), 90).save(folder / 'grey.png')  # greyscale and portrait: converted, resized, cropped
    return folder


def test_prints_the_top_classes_with_imagenet_names(known_weights, images, capsys):
    lines = classify_demo.main([str(images), '--model', 'rest_lite', '--weights', known_weights, '--topk', '3'])
    bias = torch.zeros(1000)
    bias[[1, 207, 281]] = torch.tensor([3., 2., 1.])
    goldfish, retriever, tabby = bias.softmax(0)[[1, 207, 281]].tolist()
    expected = [f'  {goldfish:.4f}     1  n01443537  goldfish, Carassius auratus',
                f'  {retriever:.4f}   207  n02099601  golden retriever',
                f'  {tabby:.4f}   281  n02123045  tabby, tabby cat']
    assert lines == [f'{images / "grey.png"}:', *expected, f'{images / "orange.jpg"}:', *expected]
    assert capsys.readouterr().out.splitlines() == lines


@pytest.fixture
def classifier_inputs(monkeypatch) -> list:
    """The inputs the demo's ResT classifier is called on, in order."""
    seen = []
    model_forward = torch.nn.Module.__call__

    def record(module, *args, **kwargs):
        if type(module).__name__ == 'ResTClassifier':
            seen.append(args[0])
        return model_forward(module, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, '__call__', record)
    return seen


def test_uses_the_models_own_evaluation_transform(known_weights, images, classifier_inputs):
    seen = classifier_inputs
    classify_demo.main([str(images / 'orange.jpg'), '--model', 'rest_lite', '--weights', known_weights])
    image, = seen
    assert image.shape == (1, 3, 224, 224)  # ResT's cfg: crop_pct 1.0, 224
    red = (200 / 255 - 0.485) / 0.229  # ImageNet mean and std of the pretrained cfg
    assert torch.allclose(image[0, 0], torch.full((224, 224), red), atol=2e-2)


@pytest.mark.parametrize('arguments, message', [
    (['{images}/orange.jpg', '--model', 'rest_tiny'],
     r"^error: --model rest_tiny is not one of mmrmt's timm models: rest_base, rest_large, rest_lite, .*rmt_t$"),
    (['{images}/orange.jpg', '--model', 'rest_lite', '--topk', '0'], r'^error: --topk must be in 1-1000'),
])
def test_bad_inputs_end_in_one_line(known_weights, images, arguments, message):
    arguments = [argument.format(images=images) for argument in arguments] + ['--weights', known_weights]
    line = exit_line(classify_demo.main, arguments)
    assert re.search(message, line), line


def test_a_16_bit_greyscale_png_is_read_as_the_image_demo_reads_it(known_weights, tmp_path, classifier_inputs):
    """Scaled to 8 bits (32768 -> 128), not clipped by PIL's convert('RGB') into an almost white image."""
    seen = classifier_inputs
    classify_demo.main([str(grey16_png(tmp_path / 'grey16.png')), '--model', 'rest_lite', '--weights', known_weights])
    image, = seen
    mean, std = torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225])
    pixels = image[0] * std[:, None, None] + mean[:, None, None]  # back to 0-1
    left = pixels[:, :, :100]  # mid-grey half, away from the resized border
    assert torch.allclose(left, torch.full_like(left, 128 / 255), atol=1e-5)
    assert abs(pixels.mean().item() * 255 - 191.5) < 1.5

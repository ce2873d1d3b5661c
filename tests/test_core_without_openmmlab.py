"""The core needs torch, torchvision and timm only: in an interpreter where importing mmcv, mmengine,
mmdet and mmseg fails, ``import mmrmt`` works, every timm name builds (``features_only`` too), the three
backbones and ManhattanSelfAttention2d run as plain modules, and ``.pth`` and ``.safetensors`` weights
load, through a backbone's ``init_cfg`` and timm's ``pretrained_cfg_overlay=dict(file=...)``."""
import subprocess
import sys
import textwrap

import pytest

CORE_SCRIPT = textwrap.dedent('''
    import sys

    BLOCKED = ('mmcv', 'mmengine', 'mmdet', 'mmseg')
    for name in BLOCKED:  # as if not installed: importing them raises ModuleNotFoundError
        sys.modules[name] = None
    tmp = sys.argv[1]

    import timm
    import torch
    from safetensors.torch import save_file

    import mmrmt
    from mmrmt import ManhattanSelfAttention2d
    from mmrmt.models import RMT, ResMLP, ResT

    names = timm.list_models('rmt*') + timm.list_models('rest*')
    assert names == ['rmt_b', 'rmt_b_tl', 'rmt_l', 'rmt_l_tl', 'rmt_s', 'rmt_s_tl', 'rmt_t',
                     'rest_base', 'rest_large', 'rest_lite', 'rest_small'], names
    image = torch.randn(1, 3, 64, 64)
    for name in names:  # the big ones: built, not run
        assert len(timm.create_model(name, features_only=True).feature_info) == 4
    for name in ('rmt_t', 'rest_lite'):
        model = timm.create_model(name).eval()
        features = timm.create_model(name, features_only=True).eval()
        with torch.no_grad():
            assert model(image).shape == (1, 1000)
            assert [f.shape[1] for f in features(image)] == features.feature_info.channels()

        torch.save({'state_dict': model.state_dict()}, f'{tmp}/{name}.pth')
        save_file(model.state_dict(), f'{tmp}/{name}.safetensors')
        for suffix in ('pth', 'safetensors'):
            loaded = timm.create_model(name, pretrained=True,
                                       pretrained_cfg_overlay=dict(file=f'{tmp}/{name}.{suffix}')).eval()
            with torch.no_grad():
                assert torch.equal(loaded(image), model(image)), (name, suffix)

    for backbone_class, arch in ((RMT, 't'), (ResT, 'lite'), (ResMLP, '12')):
        name = backbone_class.__name__
        backbone = backbone_class(arch=arch)
        torch.save(backbone.state_dict(), f'{tmp}/{name}.pth')
        save_file(backbone.state_dict(), f'{tmp}/{name}.safetensors')
        for suffix in ('pth', 'safetensors'):
            again = backbone_class(arch=arch, init_cfg=dict(type='Pretrained', checkpoint=f'{tmp}/{name}.{suffix}'))
            again.init_weights()
            assert all(torch.equal(again.state_dict()[key], value)
                       for key, value in backbone.state_dict().items()), (name, suffix)
        with torch.no_grad():
            assert len(backbone.eval()(image)) == 4
    attention = ManhattanSelfAttention2d(64, num_heads=4)
    assert attention(torch.randn(2, 64, 7, 9)).shape == (2, 64, 7, 9)

    assert isinstance(RMT(arch='t'), torch.nn.Module)
    assert [name for name in sys.modules if name.startswith(BLOCKED) and sys.modules[name] is not None] == []
    print('core works')
''')


@pytest.mark.slow  # a fresh process
def test_the_core_works_where_openmmlab_cannot_be_imported(tmp_path):
    result = subprocess.run([sys.executable, '-c', CORE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == 'core works'

"""A backbone swapped in a config whose neck (or heads) keep the old backbone's channels is one line naming both
channel lists when the tools build the model (issue 49: README's snippet with type='ResMLP' ended in a torch
traceback inside the FPN)."""
import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError, build_cpu_model
from helpers.backbones import RESMLP_TINY
from helpers.tool_modules import REPO

CONFIGS = REPO / 'tests' / 'data' / 'configs'


def refusal(cfg: Config) -> str:
    with pytest.raises(PreflightError) as refused:
        build_cpu_model(cfg, quiet=True)
    return str(refused.value)


def test_a_backbone_whose_channels_the_neck_does_not_take():
    cfg = Config.fromfile(CONFIGS / 'retinanet_rmt-tiny_fpn_test.py')  # neck in_channels [32, 64, 64]
    cfg.model.backbone = dict(type='ResMLP', arch=RESMLP_TINY, out_levels=(1, 2, 3))
    assert refusal(cfg) == (f"{cfg.filename}: the backbone (ResMLP) gives features of [16, 16, 16] channels, but "
                            'model.neck (FPN) takes in_channels=[32, 64, 64]: set model.neck.in_channels=[16, 16, 16]')
    cfg.model.neck.in_channels = [16, 16, 16]
    build_cpu_model(cfg, quiet=True)


def test_a_segmentor_s_heads_read_the_backbone_by_their_in_index():
    cfg = Config.fromfile(CONFIGS / 'upernet_rmt-tiny_test.py')
    build_cpu_model(cfg, quiet=True)
    assert cfg.model.get('neck') is None
    dims = cfg.model.backbone.arch.embed_dims
    index = cfg.model.auxiliary_head.in_index
    cfg.model.auxiliary_head.in_channels = dims[index] + 1
    assert refusal(cfg).endswith(f'but model.auxiliary_head (FCNHead) takes in_channels={dims[index] + 1}: set '
                                 f'model.auxiliary_head.in_channels={dims[index]}')


def test_the_readme_snippet_names_each_backbone_s_channels():
    """The README's backbone snippet: its neck's in_channels are RMT-S's, and the comment gives ResMLP-12's."""
    import ast
    import re

    import torch

    from mmrmt.models import RMT, ResMLP
    from mmrmt.utils.neck_fit import backbone_channels
    snippet = (REPO / 'README.md').read_text().split('## Use a backbone', 1)[1].split('```', 2)[1]
    neck = re.search(r"neck=dict\(in_channels=(\[[\d, ]+\])\)\)  # .*ResMLP-12 (\[[\d, ]+\])", snippet)
    assert re.search(r"type='RMT'.*\n\s+arch='s'", snippet) and neck, snippet
    with torch.device('meta'):
        assert backbone_channels(RMT(arch='s')) == ast.literal_eval(neck.group(1))
        assert backbone_channels(ResMLP(arch='12')) == ast.literal_eval(neck.group(2))

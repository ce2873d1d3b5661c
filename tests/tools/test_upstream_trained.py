"""The authors' trained detectors (mmdet 2.x) and segmentors (mmseg 0.x) on our configs.

Files are written in the upstream layout (tests/upstream_trained_layouts.py,
from the upstream module definitions) holding a model's weights; converted by
tools/model_converters/rmt_upstream_trained_to_mmrmt.py, they must load into
our config's model strictly and give the outputs of the model whose weights
they hold.
"""
import pickle
from pathlib import Path

import pytest
import torch
from mmengine.config import Config

from mmrmt.checkpoint import load_with_checkpoint_types
from mmrmt.models.backbones import RMT
from mmrmt.utils import PreflightError, build_cpu_model
from helpers.code_in_checkpoint import with_code_in_saved_config
from helpers.tool_modules import import_tool
from helpers.upstream_trained_layouts import upstream_checkpoint, upstream_model_layout
from tool_process import (DET_CONFIG, REPO, SEG_CONFIG, check_ok, det_data_options, load_checkpoint, metric, run_tool,
                          seg_data_options)

get_flops = import_tool('tools/analysis_tools/get_flops.py')
converter = import_tool('tools/model_converters/rmt_upstream_trained_to_mmrmt.py')

MMDET2 = ('mmdet_version', '2.11.0')
MMSEG0 = ('mmseg_version', '0.13.0')
UNUSED_STAGE_1_NORM = {'backbone.extra_norms.0.weight', 'backbone.extra_norms.0.bias'}
MODELS = [  # our config, the upstream version, the keys conversion drops
    ('retinanet_rmt-t_fpn_1x_coco.py', MMDET2, UNUSED_STAGE_1_NORM),
    ('mask-rcnn_rmt-t_fpn_1x_coco.py', MMDET2, set()),
    ('cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py', MMDET2, set()),
    ('upernet_rmt-t_8xb2-160k_ade20k-512x512.py', MMSEG0, set()),
    ('fpn_rmt-t_8xb2-80k_ade20k-512x512.py', MMSEG0, set()),
]


def dataset_classes(cfg: Config) -> tuple:
    """The classes of a config's test set (demo metainfo, or COCO / ADE20K)."""
    dataset = cfg.test_dataloader.dataset
    if dataset.get('metainfo'):
        return tuple(dataset.metainfo.classes)
    if cfg.default_scope == 'mmdet':
        from mmdet.datasets import CocoDataset
        return CocoDataset.METAINFO['classes']
    from mmseg.datasets import ADE20KDataset
    return ADE20KDataset.METAINFO['classes']


def rmt_arch(cfg: Config) -> dict:
    arch = cfg.model.backbone.arch
    return RMT.arch_zoo[arch] if isinstance(arch, str) else arch


def build_model(config: Path) -> torch.nn.Module:
    """The config's model in eval mode, detectors keeping 5 proposals (for speed)."""
    cfg = Config.fromfile(str(config))
    if cfg.model.get('rpn_head'):
        cfg.model.test_cfg.rpn.max_per_img = 5
    return build_cpu_model(cfg)


def trained_like_model(config: Path) -> torch.nn.Module:
    """The config's model with random BN statistics (as a trained model has)."""
    torch.manual_seed(0)
    model = build_model(config)
    for name, buffer in model.named_buffers():
        if name.endswith('running_mean'):
            buffer.normal_(0, 0.1)
        elif name.endswith('running_var'):
            buffer.uniform_(0.5, 1.5)
    return model


def write_upstream_file(model: torch.nn.Module, config: Path, version: tuple, path: Path) -> dict:
    """``model``'s weights in the upstream layout of ``config``'s model, saved to ``path``."""
    cfg = Config.fromfile(str(config))
    layout = upstream_model_layout(cfg.model, rmt_arch(cfg))
    checkpoint = upstream_checkpoint(layout, model.state_dict(), dataset_classes(cfg), version)
    torch.save(checkpoint, path)
    return checkpoint


def tensor_outputs(model: torch.nn.Module, image: torch.Tensor) -> list:
    forward = get_flops.tensor_forward(model, *image.shape[-2:])
    with torch.no_grad():
        outputs = forward(image)
    flat, stack = [], [outputs]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        else:
            flat.append(item)
    return flat


@pytest.mark.parametrize('config_name, version, dropped', MODELS, ids=[m[0].split('_')[0] for m in MODELS])
def test_upstream_file_gives_the_outputs_of_its_weights(config_name, version, dropped, tmp_path):
    config = REPO / 'configs' / 'rmt' / config_name
    model = trained_like_model(config)
    upstream = write_upstream_file(model, config, version, tmp_path / 'upstream.pth')

    reasons = converter.convert(str(tmp_path / 'upstream.pth'), str(tmp_path / 'ours.pth'), str(config))

    assert set(reasons) == dropped
    assert all('stage' in reason for reason in reasons.values())
    converted = load_checkpoint(tmp_path / 'ours.pth')
    fresh = build_model(config)
    result = fresh.load_state_dict(converted['state_dict'], strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == []
    if not dropped:  # the keys already match: load_from takes the upstream file as it is
        direct = fresh.load_state_dict(upstream['state_dict'], strict=False)
        assert direct.missing_keys == [] and direct.unexpected_keys == []
    assert converted['meta']['dataset_meta']['classes'] == tuple(upstream['meta']['CLASSES'])
    image = torch.rand(1, 3, 64, 96, generator=torch.Generator().manual_seed(1))
    expected, actual = tensor_outputs(model, image), tensor_outputs(fresh, image)
    assert len(expected) == len(actual) > 0
    for want, got in zip(expected, actual):
        assert torch.equal(want, got)


@pytest.fixture(scope='module')
def tiny_upstream_detector(tmp_path_factory) -> Path:
    """An upstream-layout Mask R-CNN file of the tiny test detector."""
    path = tmp_path_factory.mktemp('upstream') / 'maskrcnn_tiny.pth'
    write_upstream_file(trained_like_model(DET_CONFIG), DET_CONFIG, MMDET2, path)
    return path


def test_converter_checks_before_writing(tiny_upstream_detector, tmp_path):
    src, dst = tiny_upstream_detector, tmp_path / 'ours.pth'
    dst.write_bytes(b'keep me')
    with pytest.raises(PreflightError, match='exists; choose another path, or add --force'):
        converter.main([str(src), str(dst), '--config', str(DET_CONFIG)])
    with pytest.raises(PreflightError, match='is the source .*not even with --force'):
        converter.main([str(src), str(src), '--config', str(DET_CONFIG), '--force'])
    with pytest.raises(PreflightError, match=r'unexpected keys, of the .*RPNHead.*; .*'
                                             r'missing keys \(auxiliary_head'):
        converter.main([str(src), str(dst), '--config', str(SEG_CONFIG), '--force'])
    assert dst.read_bytes() == b'keep me' and sorted(p.name for p in tmp_path.iterdir()) == ['ours.pth']
    converter.main([str(src), str(dst), '--config', str(DET_CONFIG), '--force'])
    assert 'state_dict' in load_checkpoint(dst)


def test_the_saved_config_texts_are_never_run(tiny_upstream_detector, tmp_path):
    marker, source = tmp_path / 'PWNED', tmp_path / 'upstream.pth'
    torch.save(with_code_in_saved_config(load_with_checkpoint_types(tiny_upstream_detector), marker), source)
    converter.main([str(source), str(tmp_path / 'ours.pth'), '--config', str(DET_CONFIG)])
    assert 'state_dict' in load_checkpoint(tmp_path / 'ours.pth') and not marker.exists()


def evaluate(checkpoint: Path, demo_root: Path, out_dir: Path) -> tuple:
    """tools/test.py on the tiny detector: (printed bbox mAP, dumped predictions)."""
    result = run_tool(['test.py', DET_CONFIG, checkpoint, '--work-dir', out_dir, '--out', out_dir / 'preds.pkl',
                       '--cfg-options', *det_data_options(demo_root)])
    check_ok(result)
    return metric(result.stdout, 'coco/bbox_mAP'), pickle.loads((out_dir / 'preds.pkl').read_bytes())


def test_tools_test_evaluates_a_converted_file_like_the_original(det_work_dir, det_test_run, demo_root,
                                                                 tmp_path):
    """Trained weights (the shared 4-iteration run) in the upstream layout,
    converted or not, evaluate to the predictions and mAP of the original
    (the shared evaluation of that run)."""
    trained = build_cpu_model(Config.fromfile(str(DET_CONFIG)))
    trained.load_state_dict(load_checkpoint(det_work_dir / 'iter_4.pth')['state_dict'])
    write_upstream_file(trained, DET_CONFIG, MMDET2, tmp_path / 'upstream.pth')
    converter.main([str(tmp_path / 'upstream.pth'), str(tmp_path / 'ours.pth'), '--config', str(DET_CONFIG)])
    original_map = metric(det_test_run.stdout, 'coco/bbox_mAP')
    original = pickle.loads(det_test_run.out.read_bytes())
    assert len(original) == 8 and sum(len(image['pred_instances']['scores']) for image in original) > 0
    # Mask R-CNN's keys match: the upstream file also evaluates as it is.
    for checkpoint in (tmp_path / 'ours.pth', tmp_path / 'upstream.pth'):
        bbox_map, predictions = evaluate(checkpoint, demo_root, tmp_path / checkpoint.stem)
        assert bbox_map == original_map
        for want, got in zip(original, predictions, strict=True):
            for field in ('bboxes', 'scores', 'labels'):
                assert torch.equal(torch.as_tensor(want['pred_instances'][field]),
                                   torch.as_tensor(got['pred_instances'][field]))


def test_load_from_starts_fine_tuning_from_a_converted_file(demo_root, tmp_path):
    """One training iteration at learning rate 0 from ``load_from``: the
    checkpoint it writes holds the converted weights (BN statistics move)."""
    model = trained_like_model(SEG_CONFIG)
    write_upstream_file(model, SEG_CONFIG, MMSEG0, tmp_path / 'upstream.pth')
    converter.main([str(tmp_path / 'upstream.pth'), str(tmp_path / 'ours.pth'), '--config', str(SEG_CONFIG)])
    check_ok(run_tool(['train.py', SEG_CONFIG, '--work-dir', tmp_path / 'work', '--cfg-options',
                       f'load_from={tmp_path / "ours.pth"}', 'train_cfg.max_iters=1', 'train_cfg.val_interval=100',
                       'optim_wrapper.optimizer.lr=0', *seg_data_options(demo_root)]))
    after = load_checkpoint(tmp_path / 'work' / 'iter_1.pth')['state_dict']
    weights = {key: value for key, value in model.state_dict().items()
               if not key.endswith(('running_mean', 'running_var', 'num_batches_tracked'))}
    assert set(weights) <= set(after)
    for key, value in weights.items():
        assert torch.equal(after[key], value), key

"""State-dict layouts of the RMT authors' trained detectors and segmentors.

Written from their module definitions — the RMT backbone and the mmdet 2.11
/ mmseg 0.13 copies in github.com/qhfan/RMT (``detect/``, ``segmentation/``),
whose keys mmdet 2.28 / mmseg 0.30 keep — and from their configs
(``detect/configs/_base_/models/RMT_*.py``, ``segmentation/configs/_base_/
models/RMT_*.py``), independently of mmrmt's converter: each function lists
the keys and shapes one upstream module has, given its constructor arguments.
:func:`upstream_checkpoint` fills such a layout with a model's weights and
wraps it as mmcv 1.x training scripts saved it.
"""
import math
from typing import Dict, Sequence, Tuple

import torch

Shapes = Dict[str, Tuple[int, ...]]


# --- torch and mmcv 1.x building blocks ---------------------------------------
def conv(prefix: str, cin: int, cout: int, kernel: int, bias: bool = True, groups: int = 1) -> Shapes:
    shapes = {f'{prefix}.weight': (cout, cin // groups, kernel, kernel)}
    if bias:
        shapes[f'{prefix}.bias'] = (cout, )
    return shapes


def linear(prefix: str, cin: int, cout: int) -> Shapes:
    return {f'{prefix}.weight': (cout, cin), f'{prefix}.bias': (cout, )}


def norm(prefix: str, channels: int, batch: bool = False) -> Shapes:
    """LayerNorm, or (``batch``) BatchNorm/SyncBatchNorm with its statistics."""
    shapes = {f'{prefix}.weight': (channels, ), f'{prefix}.bias': (channels, )}
    if batch:
        shapes.update({f'{prefix}.running_mean': (channels, ), f'{prefix}.running_var': (channels, ),
                       f'{prefix}.num_batches_tracked': ()})
    return shapes


def conv_module(prefix: str, cin: int, cout: int, kernel: int, with_bn: bool) -> Shapes:
    """mmcv's ConvModule: ``conv`` (no bias when normalised) and ``bn``."""
    shapes = conv(f'{prefix}.conv', cin, cout, kernel, bias=not with_bn)
    if with_bn:
        shapes.update(norm(f'{prefix}.bn', cout, batch=True))
    return shapes


# --- the upstream RMT (detect/mmdet/models/backbones/RMT.py) ------------------
def rmt_backbone(embed_dims: Sequence[int], depths: Sequence[int], num_heads: Sequence[int],
                 mlp_ratios: Sequence[float], layerscales: Sequence[bool]) -> Shapes:
    """PatchEmbed, BasicLayer (Relpos, RetBlocks, PatchMerging) and the four
    output LayerNorms the detection/segmentation RMT always builds."""
    stem = embed_dims[0] // 2
    shapes: Shapes = {}
    stem_convs = ((3, stem), (stem, stem), (stem, embed_dims[0]), (embed_dims[0], embed_dims[0]))
    for index, (cin, cout) in zip((0, 3, 6, 9), stem_convs):
        shapes.update(conv(f'patch_embed.proj.{index}', cin, cout, 3))
        shapes.update(norm(f'patch_embed.proj.{index + 1}', cout, batch=True))
    for i, dims in enumerate(embed_dims):
        layer = f'layers.{i}'
        shapes[f'{layer}.Relpos.angle'] = (dims // num_heads[i] // 2 * 2, )
        shapes[f'{layer}.Relpos.decay'] = (num_heads[i], )
        ffn_dims = int(mlp_ratios[i] * dims)
        for j in range(depths[i]):
            block = f'{layer}.blocks.{j}'
            shapes.update(norm(f'{block}.retention_layer_norm', dims))
            for proj in ('q_proj', 'k_proj', 'v_proj'):
                shapes.update(linear(f'{block}.retention.{proj}', dims, dims))
            shapes.update(conv(f'{block}.retention.lepe.conv', dims, dims, 5, groups=dims))
            shapes.update(linear(f'{block}.retention.out_proj', dims, dims))
            shapes.update(norm(f'{block}.final_layer_norm', dims))
            shapes.update(linear(f'{block}.ffn.fc1', dims, ffn_dims))
            shapes.update(linear(f'{block}.ffn.fc2', ffn_dims, dims))
            shapes.update(conv(f'{block}.ffn.dwconv.conv', ffn_dims, ffn_dims, 3, groups=ffn_dims))
            shapes.update(conv(f'{block}.pos.conv', dims, dims, 3, groups=dims))
            if layerscales[i]:
                shapes[f'{block}.gamma_1'] = shapes[f'{block}.gamma_2'] = (1, 1, 1, dims)
        if i + 1 < len(embed_dims):
            shapes.update(conv(f'{layer}.downsample.reduction', dims, embed_dims[i + 1], 3))
            shapes.update(norm(f'{layer}.downsample.norm', embed_dims[i + 1], batch=True))
    for i, dims in enumerate(embed_dims):
        shapes.update(norm(f'extra_norms.{i}', dims))
    return shapes


# --- mmdet 2.x ----------------------------------------------------------------
def fpn(in_channels: Sequence[int], out_channels: int, num_outs: int, start_level: int = 0,
        extra_convs_on_input: bool = False) -> Shapes:
    """mmdet 2.x / mmseg 0.x FPN without norm (convs with bias)."""
    shapes: Shapes = {}
    for index, level in enumerate(range(start_level, len(in_channels))):
        shapes.update(conv_module(f'lateral_convs.{index}', in_channels[level], out_channels, 1, False))
        shapes.update(conv_module(f'fpn_convs.{index}', out_channels, out_channels, 3, False))
    used = len(in_channels) - start_level
    if extra_convs_on_input:
        for extra in range(num_outs - used):
            cin = in_channels[-1] if extra == 0 else out_channels
            shapes.update(conv_module(f'fpn_convs.{used + extra}', cin, out_channels, 3, False))
    return shapes


def rpn_head(in_channels: int, feat_channels: int, num_anchors: int) -> Shapes:
    return {**conv('rpn_conv', in_channels, feat_channels, 3), **conv('rpn_cls', feat_channels, num_anchors, 1),
            **conv('rpn_reg', feat_channels, num_anchors * 4, 1)}


def convfc_bbox_head(in_channels: int, num_classes: int, fc_out_channels: int, num_shared_fcs: int,
                     num_shared_convs: int = 0, conv_out_channels: int = 256, roi_feat_size: int = 7,
                     with_bn: bool = False) -> Shapes:
    """ConvFCBBoxHead (Shared2FCBBoxHead: two shared fcs, no convs)."""
    shapes: Shapes = {}
    channels = in_channels
    for i in range(num_shared_convs):
        shapes.update(conv_module(f'shared_convs.{i}', channels, conv_out_channels, 3, with_bn))
        channels = conv_out_channels
    channels *= roi_feat_size * roi_feat_size
    for i in range(num_shared_fcs):
        shapes.update(linear(f'shared_fcs.{i}', channels, fc_out_channels))
        channels = fc_out_channels
    return {**shapes, **linear('fc_cls', channels, num_classes + 1), **linear('fc_reg', channels, 4 * num_classes)}


def fcn_mask_head(num_convs: int, in_channels: int, conv_out_channels: int, num_classes: int) -> Shapes:
    shapes: Shapes = {}
    for i in range(num_convs):
        shapes.update(conv_module(f'convs.{i}', in_channels if i == 0 else conv_out_channels,
                                  conv_out_channels, 3, False))
    shapes['upsample.weight'] = (conv_out_channels, conv_out_channels, 2, 2)  # ConvTranspose2d
    shapes['upsample.bias'] = (conv_out_channels, )
    return {**shapes, **conv('conv_logits', conv_out_channels, num_classes, 1)}


def retina_head(in_channels: int, feat_channels: int, stacked_convs: int, num_anchors: int,
                num_classes: int) -> Shapes:
    shapes: Shapes = {}
    for i in range(stacked_convs):
        cin = in_channels if i == 0 else feat_channels
        shapes.update(conv_module(f'cls_convs.{i}', cin, feat_channels, 3, False))
        shapes.update(conv_module(f'reg_convs.{i}', cin, feat_channels, 3, False))
    return {**shapes, **conv('retina_cls', feat_channels, num_anchors * num_classes, 3),
            **conv('retina_reg', feat_channels, num_anchors * 4, 3)}


# --- mmseg 0.x ----------------------------------------------------------------
def uper_head(in_channels: Sequence[int], channels: int, pool_scales: Sequence[int], num_classes: int) -> Shapes:
    shapes: Shapes = {}
    for i in range(len(pool_scales)):
        shapes.update(conv_module(f'psp_modules.{i}.1', in_channels[-1], channels, 1, True))
    shapes.update(conv_module('bottleneck', in_channels[-1] + len(pool_scales) * channels, channels, 3, True))
    for i, cin in enumerate(in_channels[:-1]):
        shapes.update(conv_module(f'lateral_convs.{i}', cin, channels, 1, True))
        shapes.update(conv_module(f'fpn_convs.{i}', channels, channels, 3, True))
    shapes.update(conv_module('fpn_bottleneck', len(in_channels) * channels, channels, 3, True))
    return {**shapes, **conv('conv_seg', channels, num_classes, 1)}


def fpn_head(in_channels: Sequence[int], feature_strides: Sequence[int], channels: int, num_classes: int) -> Shapes:
    """Each scale head is a Sequential of ConvModules, each followed by an
    (unweighted) nn.Upsample except on the finest level."""
    shapes: Shapes = {}
    for level, stride in enumerate(feature_strides):
        length = max(1, int(math.log2(stride) - math.log2(feature_strides[0])))
        step = 1 if stride == feature_strides[0] else 2
        for k in range(length):
            cin = in_channels[level] if k == 0 else channels
            shapes.update(conv_module(f'scale_heads.{level}.{k * step}', cin, channels, 3, True))
    return {**shapes, **conv('conv_seg', channels, num_classes, 1)}


def fcn_head(in_channels: int, channels: int, num_convs: int, num_classes: int) -> Shapes:
    shapes: Shapes = {}
    for i in range(num_convs):
        shapes.update(conv_module(f'convs.{i}', in_channels if i == 0 else channels, channels, 3, True))
    return {**shapes, **conv('conv_seg', channels, num_classes, 1)}


def under(prefix: str, shapes: Shapes) -> Shapes:
    return {f'{prefix}.{key}': shape for key, shape in shapes.items()}


# --- whole models, from the upstream configs ------------------------------------
def upstream_model_layout(model: dict, rmt_arch: dict) -> Shapes:
    """The upstream model that ``model`` (the model dict of one of our configs)
    matches: same backbone variant, head sizes and class count, built the
    way the authors' config builds it.

    Args:
        model (dict): Our config's ``model``.
        rmt_arch (dict): The backbone variant's settings (RMT.arch_zoo form).
    """
    dims = rmt_arch['embed_dims']
    shapes = under('backbone', rmt_backbone(dims, rmt_arch['depths'], rmt_arch['num_heads'],
                                            rmt_arch['mlp_ratios'], rmt_arch['layer_scales']))
    neck, kind = model.get('neck'), model['type']
    if kind == 'RetinaNet':  # RMT_retinanet.py: all four stages in, FPN from the second, P6 on its input
        shapes.update(under('neck', fpn(dims, neck['out_channels'], neck['num_outs'], start_level=1,
                                        extra_convs_on_input=True)))
        head, anchors = model['bbox_head'], model['bbox_head']['anchor_generator']
        shapes.update(under('bbox_head', retina_head(head['in_channels'], head['feat_channels'],
                                                     head['stacked_convs'],
                                                     anchors['scales_per_octave'] * len(anchors['ratios']),
                                                     head['num_classes'])))
        return shapes
    if neck is not None:  # all but UperNet
        shapes.update(under('neck', fpn(dims, neck['out_channels'], neck['num_outs'])))
    if kind in ('MaskRCNN', 'CascadeRCNN'):
        rpn, anchors = model['rpn_head'], model['rpn_head']['anchor_generator']
        shapes.update(under('rpn_head', rpn_head(rpn['in_channels'], rpn['feat_channels'],
                                                 len(anchors['scales']) * len(anchors['ratios']))))
        roi = model['roi_head']
        if kind == 'MaskRCNN':  # RMT_rcnn.py: Shared2FCBBoxHead, FCNMaskHead
            boxes = [convfc_bbox_head(roi['bbox_head']['in_channels'], roi['bbox_head']['num_classes'],
                                      roi['bbox_head']['fc_out_channels'], num_shared_fcs=2)]
            masks = [mask_head_layout(roi['mask_head'])]
            stage_prefixes = ['']
        else:  # RMT_cas_rcnn.py: three ConvFCBBoxHead (4 convs with SyncBN, 1 fc), one FCNMaskHead a stage
            boxes = [convfc_bbox_head(head['in_channels'], head['num_classes'], head['fc_out_channels'],
                                      num_shared_fcs=1, num_shared_convs=4,
                                      conv_out_channels=head['conv_out_channels'], with_bn=True)
                     for head in roi['bbox_head']]
            masks = [mask_head_layout(roi['mask_head'])] * roi['num_stages']
            stage_prefixes = [f'.{stage}' for stage in range(roi['num_stages'])]
        for prefix, box, mask in zip(stage_prefixes, boxes, masks):
            shapes.update(under(f'roi_head.bbox_head{prefix}', box))
            shapes.update(under(f'roi_head.mask_head{prefix}', mask))
        return shapes
    head = model['decode_head']
    if head['type'] == 'FPNHead':  # RMT_fpn.py
        shapes.update(under('decode_head', fpn_head(head['in_channels'], head['feature_strides'],
                                                    head['channels'], head['num_classes'])))
    else:  # RMT_upper.py: UPerHead and an FCNHead on stage 3
        shapes.update(under('decode_head', uper_head(head['in_channels'], head['channels'],
                                                     head['pool_scales'], head['num_classes'])))
        aux = model['auxiliary_head']
        shapes.update(under('auxiliary_head', fcn_head(aux['in_channels'], aux['channels'], aux['num_convs'],
                                                       aux['num_classes'])))
    return shapes


def mask_head_layout(head: dict) -> Shapes:
    return fcn_mask_head(head['num_convs'], head['in_channels'], head['conv_out_channels'], head['num_classes'])


def upstream_checkpoint(layout: Shapes, weights: Dict[str, torch.Tensor], classes: Sequence[str],
                        version: Tuple[str, str], seed: int = 0) -> dict:
    """A checkpoint of ``layout`` as mmcv 1.x training scripts wrote it.

    Each tensor is the one ``weights`` has under the same key (it must have
    the layout's shape); keys ``weights`` lacks get random values — an upstream
    model has weights that ours has no use for.

    Args:
        layout (Shapes): From :func:`upstream_model_layout`.
        weights (dict): A model's state dict.
        classes (Sequence[str]): Stored as ``meta['CLASSES']``.
        version (tuple): e.g. ``('mmdet_version', '2.11.0')``.
    """
    generator = torch.Generator().manual_seed(seed)
    state_dict = {}
    for key, shape in layout.items():
        if key in weights:
            assert tuple(weights[key].shape) == shape, f'{key}: model {tuple(weights[key].shape)} vs upstream {shape}'
            state_dict[key] = weights[key].clone()
        else:
            state_dict[key] = torch.rand(shape, generator=generator)
    first = next(iter(state_dict.values()))
    optimizer = {'state': {0: {'step': torch.tensor(100.), 'exp_avg': torch.zeros_like(first)}},
                 'param_groups': [{'lr': 4e-6, 'betas': (0.9, 0.999), 'weight_decay': 0.05, 'params': [0]}]}
    meta = {version[0]: version[1], 'mmcv_version': '1.3.1', 'config': "model = dict(type='...')",
            'CLASSES': tuple(classes), 'epoch': 12, 'iter': 87960, 'time': 'Thu Sep 14 08:00:00 2023',
            'hook_msgs': {'last_ckpt': 'work_dirs/epoch_12.pth'}}
    return {'meta': meta, 'state_dict': state_dict, 'optimizer': optimizer,
            'amp': {'loss_scaler0': {'loss_scale': 512.0, 'unskipped': 0}}}

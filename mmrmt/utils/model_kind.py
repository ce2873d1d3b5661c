"""Which kind of model an exported graph, a model config and an mmdeploy deploy config describe, compared before
anything is built (a graph evaluated or timed with a config of another kind would fail late, or be reported
faster than the model it is not). pytorch2onnx.py names a model's ports by its kind
(:mod:`mmrmt.deployment.export.tensor_mode`): a two-stage detector takes ``image`` and ``proposals`` and returns
``rpn_*`` and ``roi_*`` (``roi_2`` the masks), a single-stage one ``head_*``, a segmentor ``seg_logits``, a
backbone ``feature_*``. mmdeploy's detection deploy configs convert models without a mask head, its
instance-segmentation ones (outputs with ``masks``) models with one.
"""
import os.path as osp
from typing import Any, Mapping, Optional

from mmengine.config import Config

from .onnx_file import BACKBONE_OUTPUT_PREFIX
from .preflight import PreflightError

#: What each kind is called in messages.
KIND_NAMES = dict(two_stage='two-stage detector', single_stage='single-stage detector', segmentor='segmentor',
                  backbone='backbone')
#: The kinds that are detectors.
DETECTORS = ('two_stage', 'single_stage')


def model_kind(model: Any) -> Optional[str]:
    """'two_stage', 'single_stage' or 'segmentor', read from the heads of a config's ``model`` dict or of
    a built model alike; None for another model (a backbone, a classifier)."""
    def has(head: str) -> bool:
        return (model.get(head) if isinstance(model, Mapping) else getattr(model, head, None)) is not None
    if has('rpn_head') and has('roi_head'):
        return 'two_stage'
    if has('bbox_head'):
        return 'single_stage'
    return 'segmentor' if has('decode_head') else None


def graph_model_kind(path: str) -> Optional[str]:
    """'two_stage', 'single_stage', 'segmentor' or 'backbone' from the graph's port names, with
    ``'+masks'`` for a two-stage graph with mask outputs; None for ports pytorch2onnx.py does not write."""
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    inputs = [value.name for value in graph.input]
    outputs = [value.name for value in graph.output]
    if inputs == ['image', 'proposals']:
        return 'two_stage+masks' if 'roi_2' in outputs else 'two_stage'
    if outputs == ['seg_logits']:
        return 'segmentor'
    if outputs and all(name.startswith('head_') for name in outputs):
        return 'single_stage'
    if outputs and all(name.startswith(BACKBONE_OUTPUT_PREFIX) for name in outputs):
        return 'backbone'
    return None


def config_model_kind(cfg: Config) -> Optional[str]:
    """The same kinds from the config's ``model`` (:func:`model_kind`; None for another model)."""
    model = cfg.get('model') or {}
    kind = model_kind(model)
    return 'two_stage+masks' if kind == 'two_stage' and model['roi_head'].get('mask_head') else kind


def describe(kind: str) -> str:
    base, _, masks = kind.partition('+')
    return KIND_NAMES[base] + (' with masks' if masks else ' without masks' if base == 'two_stage' else '')


def other_graph_kind(path: str, kind: Optional[str]) -> Optional[str]:
    """The kind of the graph ``path``, described, when both it and ``kind`` are known and differ; else None."""
    graph_kind = graph_model_kind(path)
    if graph_kind is None or kind is None or graph_kind == kind:
        return None
    return describe(graph_kind)


def check_graph_fits_config(path: str, cfg: Config, config: str) -> None:
    """Fail if the whole-model graph ``path`` and config ``config`` describe different kinds of model (one
    line naming both kinds and the two ways to make them agree)."""
    config_kind = config_model_kind(cfg)
    graph = other_graph_kind(path, config_kind)
    if graph is None:
        return
    raise PreflightError(f'{path} is the graph of a {graph}, but {config} describes a '
                         f'{describe(config_kind)} ({cfg.model.get("type")}): give the config the graph was '
                         "exported from, or export this config's model with tools/deployment/pytorch2onnx.py")


def check_deploy_config_fits(deploy_cfg: Config, deploy_config: str, model_cfg: Config, model_config: str) -> None:
    """Fail if an mmdet deploy config's outputs lack the masks of a model with a mask head, or the reverse
    (one line naming the deploy config that fits: ``detection_`` and ``instance-seg_`` swapped, if it exists)."""
    if deploy_cfg.codebase_config.get('type') != 'mmdet':
        return
    model_masks = config_model_kind(model_cfg) == 'two_stage+masks'
    deploy_masks = 'masks' in (deploy_cfg.onnx_config.get('output_names') or [])
    if model_masks == deploy_masks:
        return
    wanted, given = ('instance-seg_', 'detection_') if model_masks else ('detection_', 'instance-seg_')
    folder, name = osp.split(deploy_config)
    fitting = osp.join(folder, name.replace(given, wanted, 1))
    if given not in name or not osp.isfile(fitting):
        fitting = f'configs/deploy/{wanted}onnxruntime_*.py'
    model = f'{model_config} ({model_cfg.model.get("type")}) has {"a" if model_masks else "no"} mask head'
    raise PreflightError(f'{deploy_config} converts detectors {"without" if model_masks else "with"} masks '
                         f'(outputs {", ".join(deploy_cfg.onnx_config.get("output_names") or [])}), but {model}: '
                         f'use {fitting}')

"""The one reader of a model's kind (:func:`config_scope`: its library; :func:`model_kind`: its heads), and
the check that a graph and a model config describe the same kind before anything is built (a graph evaluated or
timed with a config of another kind would fail late, or be reported as the model it is not). pytorch2onnx.py
names a model's ports by its kind (:mod:`mmrmt.deployment.export.tensor_mode`); a graph with other ports (another
exporter's) is not evaluated as a config's model: its outputs would be fed to the model's heads."""
from typing import Any, List, Mapping, Optional, Tuple

from mmengine.config import Config

from .preflight import PreflightError

#: Each kind, as messages call it.
KIND_NAMES = {'two_stage': 'two-stage detector without masks', 'two_stage+masks': 'two-stage detector with masks',
              'single_stage': 'single-stage detector', 'segmentor': 'segmentor', 'backbone': 'backbone'}
#: The ports of each kind's whole-model graph, in messages.
KIND_PORTS = dict(two_stage="takes 'image' and 'proposals' and returns rpn_* and roi_*",
                  single_stage="takes 'image' and returns head_*", segmentor="takes 'image' and returns seg_logits")
#: The first outputs of a backbone-only graph (tensor mode: ``feature_0``, ``feature_1``...).
BACKBONE_OUTPUT_PREFIX = 'feature_'


def config_scope(cfg: Config, config: str = 'the config') -> str:
    """'mmdet' or 'mmseg': the library of the config's model, its ``default_scope`` (else a ``PreflightError``)."""
    scope = cfg.get('default_scope')
    if scope not in ('mmdet', 'mmseg'):
        raise PreflightError(f"{config} is not an mmdet or mmseg model config (default_scope {scope!r}): set "
                             "default_scope = 'mmdet' (a detector) or 'mmseg' (a segmentor) in it")
    return scope


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


def graph_ports(path: str) -> Tuple[List[str], List[str]]:
    """The names of the graph's inputs and outputs."""
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    return [value.name for value in graph.input], [value.name for value in graph.output]


def graph_model_kind(path: str) -> Optional[str]:
    """A kind of :data:`KIND_NAMES` from the graph's port names; None for ports pytorch2onnx.py does not write."""
    inputs, outputs = graph_ports(path)
    if inputs == ['image', 'proposals']:
        return 'two_stage+masks' if 'roi_2' in outputs else 'two_stage'
    if outputs == ['seg_logits']:
        return 'segmentor'
    for prefix, kind in (('head_', 'single_stage'), (BACKBONE_OUTPUT_PREFIX, 'backbone')):
        if outputs and all(name.startswith(prefix) for name in outputs):
            return kind
    return None


def config_model_kind(cfg: Config) -> Optional[str]:
    """The kind of the config's ``model`` (:func:`model_kind`, ``+masks`` for a two-stage one with a mask head)."""
    model = cfg.get('model') or {}
    kind = model_kind(model)
    return 'two_stage+masks' if kind == 'two_stage' and model['roi_head'].get('mask_head') else kind


def check_graph_fits_config(path: str, cfg: Config, config: str) -> None:
    """Fail if the whole-model graph ``path`` and config ``config`` describe different kinds of model (one
    line naming both kinds and the two ways to make them agree), or, for a detector's or segmentor's config,
    if the graph has ports pytorch2onnx.py does not write (one line naming both port sets)."""
    config_kind = config_model_kind(cfg)
    graph_kind = graph_model_kind(path)
    if config_kind is None or graph_kind == config_kind:
        return
    if graph_kind is None:
        inputs, outputs = graph_ports(path)
        raise PreflightError(f'{path} is no graph of tools/deployment/pytorch2onnx.py (inputs {inputs}, outputs '
                             f'{outputs[:4]}{"..." if len(outputs) > 4 else ""}); the graph of {config}, a '
                             f'{KIND_NAMES[config_kind]}, {KIND_PORTS[config_kind.partition("+")[0]]}: export it '
                             'with tools/deployment/pytorch2onnx.py')
    raise PreflightError(f'{path} is the graph of a {KIND_NAMES[graph_kind]}, but {config} describes a '
                         f'{KIND_NAMES[config_kind]} ({cfg.model.get("type")}): give the config the graph was '
                         "exported from, or export this config's model with tools/deployment/pytorch2onnx.py")

"""Convert an mmrmt model with mmdeploy (onnxruntime backend) and check the graph against torch.

mmdeploy's ``tools/deploy.py`` ``torch2onnx`` for onnxruntime, made right for torch 2.14 and our models
(``mmrmt/deployment/mmdeploy/rewriters.py``); the graph is written to WORK_DIR only if its predictions on IMAGE,
which must fill a detector's input, agree with torch's (docs/deployment.md). Needs the mmdeploy extra (``make
setup``).

Example::

    python tools/deployment/mmdeploy_deploy.py configs/deploy/instance-seg_onnxruntime_static-800x1344.py \\
        configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py demo.jpg --weights mask-rcnn_rmt-t.pth \\
        --work-dir work_dirs/mmdeploy/mask-rcnn_rmt-t
"""
import argparse
import os
import os.path as osp
import shutil
import tempfile
from typing import List, Optional, Tuple

from mmengine.config import Config

from mmrmt.utils import (PreflightError, check_installed, check_new_file, check_run_checkpoint, check_writable,
                         config_model_specs, read_config, run_main)
from mmrmt.utils.model_kind import config_model_kind, config_scope

MMDEPLOY_HINT = ('install the mmdeploy extra: make setup, or pip install --no-deps -c requirements/constraints.txt '
                 '-r requirements/mmdeploy.txt')
#: The backends mmrmt's rewriters are registered for (mmrmt.deployment.mmdeploy.SUPPORTED_BACKENDS).
BACKENDS = ('onnxruntime', )
CODEBASES = ('mmdet', 'mmseg')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('deploy_cfg', help='mmdeploy deploy config (e.g. configs/deploy/*.py)')
    parser.add_argument('model_cfg', help='model config')
    parser.add_argument('image', help='image the model is traced with and the graph checked on')
    parser.add_argument('--work-dir', required=True, help='folder the graph (onnx_config.save_file) is written to')
    parser.add_argument('--weights', help='checkpoint of the model (default: initialised weights)')
    parser.add_argument('--device', default='cpu', help='device torch traces on (default cpu)')
    parser.add_argument('--force', action='store_true', help='replace the graph in --work-dir if it exists')
    return parser.parse_args(argv)


def check_deploy_config(path: str) -> Config:
    """The deploy config, if it has what the route needs (sections, a supported backend and codebase)."""
    cfg = read_config(path)
    missing = [key for key in ('onnx_config', 'codebase_config', 'backend_config') if key not in cfg]
    if missing:
        raise PreflightError(f'{path} is not an mmdeploy deploy config: it has no {", ".join(missing)}')
    backend = cfg.backend_config.get('type')
    if backend not in BACKENDS:
        raise PreflightError(f'{path}: backend {backend!r} is not supported by this route (mmrmt registers its '
                             f'rewriters for {", ".join(BACKENDS)} only, and mmdeploy\'s defaults give other '
                             'backends a wrong UperNet); use configs/deploy/*_onnxruntime_*.py')
    if cfg.codebase_config.get('type') not in CODEBASES:
        raise PreflightError(f'{path}: codebase {cfg.codebase_config.get("type")!r} is not one of '
                             f'{", ".join(CODEBASES)}')
    return cfg


def check_deploy_config_fits(deploy_cfg: Config, deploy_config: str, model_cfg: Config, model_config: str) -> None:
    """Fail if an mmdet deploy config's outputs lack the masks of a model with a mask head, or the reverse
    (one line naming the deploy config that fits: ``detection_`` and ``instance-seg_`` swapped, if it exists)."""
    model_masks = config_model_kind(model_cfg) == 'two_stage+masks'
    outputs = deploy_cfg.onnx_config.get('output_names') or []
    if deploy_cfg.codebase_config.get('type') != 'mmdet' or model_masks == ('masks' in outputs):
        return
    wanted, given = ('instance-seg_', 'detection_') if model_masks else ('detection_', 'instance-seg_')
    folder, name = osp.split(deploy_config)
    fitting = osp.join(folder, name.replace(given, wanted, 1))
    if given not in name or not osp.isfile(fitting):
        fitting = f'configs/deploy/{wanted}onnxruntime_*.py'
    raise PreflightError(f'{deploy_config} converts detectors {"without" if model_masks else "with"} masks '
                         f'(outputs {", ".join(outputs)}), but {model_config} ({model_cfg.model.get("type")}) has '
                         f'{"a" if model_masks else "no"} mask head: use {fitting}')


def preflight(args: argparse.Namespace) -> Tuple[Config, Config, str]:
    """Check every input, then that mmdeploy is installed, before anything is built; return both
    configs and the graph's path."""
    deploy_cfg = check_deploy_config(args.deploy_cfg)
    model_cfg = read_config(args.model_cfg)
    if 'model' not in model_cfg or config_scope(model_cfg, args.model_cfg) != deploy_cfg.codebase_config.type:
        raise PreflightError(f'{args.model_cfg} is not an {deploy_cfg.codebase_config.type} model config, which '
                             f'{args.deploy_cfg} converts')
    check_deploy_config_fits(deploy_cfg, args.deploy_cfg, model_cfg, args.model_cfg)
    if not osp.isfile(args.image):
        raise PreflightError(f'image {args.image} does not exist')
    if args.weights is not None:
        check_run_checkpoint(model_cfg, config_model_specs(model_cfg), args.weights, '--weights')
    check_writable(args.work_dir, '--work-dir', is_dir=True)
    graph = osp.join(args.work_dir, deploy_cfg.onnx_config.save_file)
    check_new_file(graph, 'the graph', args.force,
                   inputs=[('the deploy config', args.deploy_cfg), ('the model config', args.model_cfg),
                           ('the image', args.image), ('--weights', args.weights)])
    check_installed(['mmdeploy'], MMDEPLOY_HINT)
    return deploy_cfg, model_cfg, graph


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    deploy_cfg, model_cfg, graph = preflight(args)
    from mmrmt.deployment.mmdeploy import (InexactExportError, compare_with_torch, convert, input_not_filled,
                                           save_initialised_weights)
    problem = input_not_filled(deploy_cfg, model_cfg, args.image, args.device)
    if problem is not None:
        raise PreflightError(f'{args.deploy_cfg}: {problem}')
    os.makedirs(args.work_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.mmdeploy-', dir=args.work_dir)
    try:
        weights = args.weights
        if weights is None:
            weights = osp.join(staging, 'initialised.pth')
            save_initialised_weights(deploy_cfg, model_cfg, weights, args.device)
        try:
            convert(deploy_cfg, model_cfg, args.image, staging, weights, args.device)
        except InexactExportError as error:
            raise PreflightError(f'{args.deploy_cfg}: {error}') from error
        staged = osp.join(staging, deploy_cfg.onnx_config.save_file)
        parity = compare_with_torch(deploy_cfg, model_cfg, staged, args.image, weights, args.device)
        if parity.problems:
            raise PreflightError(f'the graph does not predict what torch does on {args.image}, not written: '
                                 + '; '.join(parity.problems))
        os.replace(staged, graph)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f'wrote {graph}: on {args.image} its predictions match torch\'s ({parity.summary()})')


if __name__ == '__main__':
    run_main(main)

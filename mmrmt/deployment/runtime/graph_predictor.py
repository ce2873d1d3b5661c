"""mmdet's and mmseg's own ``predict`` around an exported tensor-mode graph run in onnxruntime or OpenVINO.

The graph computes what :class:`.TensorModeModel` exports (backbone, neck,
the heads' raw maps); everything around it -- normalising and padding the
images, decoding boxes, NMS, pasting masks, resizing to the original image
-- stays the model's own code: :class:`GraphPredictor` runs the built
model's ``predict`` with its feature extractor and heads' forwards answered
by the graph. A two-stage graph is cut in two in memory (:class:`.TwoStageSessions`):
image -> RPN maps and the neck's features, then features and boxes -> RoI
head outputs, so that the RoI part runs on the RPN's proposals, then on
the detections for their masks, as mmdet's ``StandardRoIHead.predict`` does (and always in f32).
"""
from contextlib import contextmanager
from typing import Dict, Iterator, List, NamedTuple, Optional

import numpy as np
import torch
from torch import nn

from ..export.tensor_mode import TensorModeModel
from .graph_session import open_graph
from .onnxruntime_session import shape_mismatch
from .two_stage import TwoStageSessions


class GraphError(ValueError):
    """The graph cannot serve this model or these inputs (one line, for the tools)."""


class GraphOutputs(NamedTuple):
    """What the image part of a graph returned for one batch: named tensors."""
    tensors: Dict[str, torch.Tensor]

    def numbered(self, prefix: str) -> List[List[torch.Tensor]]:
        """``prefix_i_j`` outputs as [[prefix_0_0, prefix_0_1, ...], [prefix_1_0, ...]]."""
        groups: Dict[int, Dict[int, torch.Tensor]] = {}
        for name, tensor in self.tensors.items():
            if name.startswith(prefix + '_'):
                first, _, second = name[len(prefix) + 1:].partition('_')
                groups.setdefault(int(first), {})[int(second or 0)] = tensor
        return [[group[j] for j in sorted(group)] for _, group in sorted(groups.items())]


class GraphPredictor:
    """A built mmdet / mmseg model whose ``predict`` runs its graph part in onnxruntime or OpenVINO.

    Args:
        model (nn.Module): The config's model, built (its weights are not
            used: the graph holds them); supplies the data preprocessor and
            the heads' decoding.
        path (str): The exported whole-model graph (tensor mode).
        threads (int, optional): The runtime's threads.
        runtime (str): 'onnxruntime' or 'openvino' (:mod:`.graph_session`).
        precision (str): 'f32' or, in OpenVINO, 'bf16'.

    Raises:
        GraphError: For a cascade RoI head, a backbone-only graph, or a
            graph of another kind of model.
        RuntimeChoiceError: For a runtime or precision this machine cannot run.
    """

    #: Boxes the RoI part of a two-stage graph takes masks of at most per call.
    mask_boxes_per_call = 100

    def __init__(self, model: nn.Module, path: str, threads: Optional[int] = None, runtime: str = 'onnxruntime',
                 precision: str = 'f32') -> None:
        import onnx
        self.model = model.eval()
        tensor_mode = TensorModeModel(model)
        self.kind, expected = tensor_mode.kind, tensor_mode.input_names
        proto = onnx.load(path)
        inputs = [value.name for value in proto.graph.input]
        if inputs != expected:
            raise GraphError(f'{path} takes inputs {inputs}; a whole {self.kind.replace("_", "-")} '
                             f'model graph takes {expected} (export it without --backbone-only)')
        if self.kind == 'two_stage':
            from mmdet.models.roi_heads import StandardRoIHead
            if type(model.roi_head) is not StandardRoIHead:
                raise GraphError(f'{type(model.roi_head).__name__} is not evaluated from a graph: '
                                 'its graph lacks the boxes its stages refine; only StandardRoIHead '
                                 'two-stage detectors, single-stage detectors and segmentors')
            sessions = TwoStageSessions(proto, precision, lambda part, part_precision, shapes:
                                        open_graph(part, runtime, part_precision, threads, shapes))
            self.image_session, self.roi_session, self.cut = sessions.image_session, sessions.roi_session, sessions.cut
        else:
            self.image_session = open_graph(path, runtime, precision, threads)
            self.roi_session = None
        self.image_inputs = [(spec.name, tuple(d if isinstance(d, int) else None for d in spec.shape))
                             for spec in self.image_session.get_inputs()]

    # --- the graph's parts ------------------------------------------------------------
    def run_image_part(self, image: torch.Tensor) -> GraphOutputs:
        mismatch = shape_mismatch(self.image_inputs, [image.shape])
        if mismatch:
            raise GraphError(f'the graph does not take this test set\'s images: {mismatch} (export it '
                             'with --dynamic, or at the size and batch the test pipeline makes)')
        names = [output.name for output in self.image_session.get_outputs()]
        values = self.image_session.run(None, {'image': image.detach().cpu().numpy()})
        return GraphOutputs(dict(zip(names, map(torch.from_numpy, values))))

    def run_roi_part(self, features: GraphOutputs, rois: torch.Tensor) -> Dict[str, torch.Tensor]:
        """``roi_*`` of the boxes of (n, 5) ``rois`` of one image."""
        feeds = {name: features.tensors[name].numpy() for name in self.cut}
        feeds['proposals'] = rois[:, 1:].contiguous().float().cpu().numpy()
        names = [output.name for output in self.roi_session.get_outputs()]
        return dict(zip(names, map(torch.from_numpy, self.roi_session.run(None, feeds))))

    # --- the model's forwards, answered by the graph -----------------------------------
    def bbox_forward(self, features: GraphOutputs, rois: torch.Tensor) -> dict:
        outputs = self.run_roi_part(features, rois)
        return dict(cls_score=outputs['roi_0'], bbox_pred=outputs['roi_1'], bbox_feats=None)

    def mask_forward(self, features: GraphOutputs, rois: torch.Tensor) -> dict:
        masks = [self.run_roi_part(features, part)['roi_2'] for part in rois.split(self.mask_boxes_per_call)]
        return dict(mask_preds=torch.cat(masks), mask_feats=None)

    @contextmanager
    def graph_forwards(self) -> Iterator[None]:
        """Within the context the model's feature extractor and heads' forwards run the graph."""
        model = self.model
        replaced = [(model, 'extract_feat', self.run_image_part)]
        if self.kind == 'single_stage':
            replaced.append((model.bbox_head, 'forward', lambda outputs: tuple(outputs.numbered('head'))))
        elif self.kind == 'segmentor':
            replaced.append((model.decode_head, 'forward', lambda outputs: outputs.tensors['seg_logits']))
        else:
            replaced += [(model.rpn_head, 'forward', lambda outputs: tuple(outputs.numbered('rpn'))),
                         (model.roi_head, '_bbox_forward', self.bbox_forward),
                         (model.roi_head, '_mask_forward', self.mask_forward)]
        for owner, name, function in replaced:
            setattr(owner, name, function)
        try:
            yield
        finally:
            for owner, name, _ in replaced:
                delattr(owner, name)

    def test_step(self, data: dict) -> list:
        """What ``model.test_step(data)`` returns, with the graph in its runtime.

        Graphs of one image (two-stage detectors, fixed-size exports of batch
        1) predict a batch image by image, each on its part of the padded
        batch tensor the model would see.
        """
        data = self.model.data_preprocessor(data, False)
        inputs, samples = data['inputs'], data['data_samples']
        with torch.no_grad(), self.graph_forwards():
            if self.kind != 'two_stage' and self.image_inputs[0][1][0] != 1:
                return self.model.predict(inputs, samples)
            return [self.model.predict(inputs[i:i + 1], samples[i:i + 1])[0] for i in range(len(samples))]


def evaluate_graph(runner, path: str, threads: Optional[int] = None, runtime: str = 'onnxruntime',
                   precision: str = 'f32') -> dict:
    """The runner's test loop and metrics with the model's ``test_step`` run through ``path`` in
    ``runtime`` at ``precision``."""
    predictor = GraphPredictor(runner.model, path, threads, runtime, precision)
    runner.model.test_step = predictor.test_step
    try:
        metrics = runner.test()
    finally:
        del runner.model.test_step
    # the loader's persistent workers, shut down now, while the runtime is loaded: at interpreter exit,
    # with OpenVINO's int8 model gone, their shutdown segfaulted (exit 139 after the metrics; AMD Zen 4)
    runner.test_loop.dataloader._iterator = None
    return metrics


def proposal_feeds(predictor: GraphPredictor, inputs: torch.Tensor) -> Iterator[Dict[str, np.ndarray]]:
    """The whole two-stage graph's feeds for a batch: each image with the RPN's proposals,
    computed by the graph and mmdet's decoding and NMS."""
    model = predictor.model
    for image in inputs.split(1):
        with torch.no_grad(), predictor.graph_forwards():
            features = model.extract_feat(image)
            meta = dict(img_shape=tuple(image.shape[-2:]), scale_factor=(1.0, 1.0))
            proposals = model.rpn_head.predict_by_feat(*features.numbered('rpn'), batch_img_metas=[meta],
                                                       cfg=model.test_cfg.rpn, rescale=False)[0]
        yield {'image': image.numpy(), 'proposals': proposals.bboxes.float().numpy()}

"""Whether an mmdeploy graph's predictions are torch's: detections, masks, segmentation maps.

Both sides are mmdet / mmseg data samples from ``test_step`` on the same
image (mmdeploy's backend model decodes its graph's outputs into the same
structures), so the comparison is of what a user gets:

* detections: the same number, matched one to one (same label, scores
  within :data:`SCORE_TOLERANCE`, every box coordinate within
  :data:`BOX_TOLERANCE` of the image's longer side); only detections whose
  score is within the score tolerance of the lowest one kept may go
  unmatched on both sides alike (a tie at the top-k cut, which rounding
  may decide either way);
* instance masks (of the matched detections): at least
  :data:`MIN_EQUAL_FRACTION` of their pixels equal;
* segmentation maps: at least :data:`MIN_EQUAL_FRACTION` of the pixels with
  the same class.

Tolerances: float32 rounds each op by 2^-24 (6e-8) of its result; through
the ~100 layers of these models the graph's raw outputs stay within 1e-5
of their range of torch's (docs/deployment.md gives the differences
measured). Class logits span about ten units, so they may be 1e-3 off,
and a score (sigmoid or softmax, slope at most 1/4) 2.5e-4: a score 1e-3
off, or a box coordinate 1e-3 of the image off, is a wrong graph, not
rounding. A mask pixel or a class whose
value sits within that rounding of the threshold (0.5) or of the runner-up
may flip; one in a thousand is far more than such ties, and far fewer than
a wrong operator changes (as mmdeploy's adaptive-pool rewrite does,
docs/deployment.md).
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch

SCORE_TOLERANCE = 1e-3
BOX_TOLERANCE = 1e-3
MIN_EQUAL_FRACTION = 0.999


@dataclass
class Parity:
    """How far a graph's predictions are from torch's on one image.

    Args:
        problems (list[str]): What does not match, one line each (empty: the graph is right).
        box_error (float, optional): The largest box coordinate difference over the image's longer side.
        equal_fraction (float, optional): The fraction of equal mask or segmentation pixels.
    """
    problems: List[str]
    box_error: Optional[float] = None
    equal_fraction: Optional[float] = None

    def summary(self) -> str:
        parts = []
        if self.box_error is not None:
            parts.append(f'boxes within {self.box_error:.1e} of the image size')
        if self.equal_fraction is not None:
            parts.append(f'{100 * self.equal_fraction:.3f} % of pixels equal')
        return ', '.join(parts) or 'no detections to compare'


def match_detections(torch_instances, graph_instances, box_tolerance: float) -> List[int]:
    """For each torch detection (by descending score), the index of its graph detection, or -1."""
    taken = torch.zeros(len(graph_instances), dtype=torch.bool)
    matches = []
    for i in torch.argsort(torch_instances.scores, descending=True).tolist():
        fits = ((graph_instances.labels == torch_instances.labels[i])
                & ((graph_instances.scores - torch_instances.scores[i]).abs() <= SCORE_TOLERANCE)
                & ((graph_instances.bboxes - torch_instances.bboxes[i]).abs().amax(-1) <= box_tolerance) & ~taken)
        candidates = fits.nonzero().flatten()
        if len(candidates) == 0:
            matches.append(-1)
            continue
        distances = (graph_instances.bboxes[candidates] - torch_instances.bboxes[i]).abs().amax(-1)
        best = int(candidates[distances.argmin()])
        taken[best] = True
        matches.append(best)
    return matches


def at_cut(scores: torch.Tensor, chosen: List[int]) -> bool:
    """Whether the ``chosen`` detections all score within the tolerance of the lowest score kept."""
    return not chosen or bool((scores[chosen] <= scores.min() + SCORE_TOLERANCE).all())


def detection_parity(torch_sample, graph_sample) -> Parity:
    """Compare the ``pred_instances`` of two mmdet ``DetDataSample`` of one image."""
    ours, theirs = torch_sample.pred_instances.cpu(), graph_sample.pred_instances.cpu()
    size = max(torch_sample.ori_shape)
    problems = []
    if len(ours) != len(theirs):
        problems.append(f'torch finds {len(ours)} detections, the graph {len(theirs)}')
    matches = match_detections(ours, theirs, BOX_TOLERANCE * size)
    order = torch.argsort(ours.scores, descending=True).tolist()
    unmatched = [i for i, j in zip(order, matches) if j < 0]
    unmatched_theirs = sorted(set(range(len(theirs))) - set(matches))
    if not (at_cut(ours.scores, unmatched) and at_cut(theirs.scores, unmatched_theirs)):
        problems.append(f'{len(unmatched)} of torch\'s {len(ours)} detections have no graph detection with its label, '
                        f'a score within {SCORE_TOLERANCE} and a box within {BOX_TOLERANCE} of the image size')
    pairs = [(i, j) for i, j in zip(order, matches) if j >= 0]
    parity = Parity(problems)
    if pairs:
        mine, other = (torch.tensor(index) for index in zip(*pairs))
        parity.box_error = float((ours.bboxes[mine] - theirs.bboxes[other]).abs().max()) / size
        if 'masks' in ours and 'masks' in theirs:
            parity.equal_fraction = equal_fraction(ours.masks[mine], theirs.masks[other], 'masks', problems)
    elif 'masks' in ours and len(ours):
        problems.append('no detection to compare masks of')
    return parity


def equal_fraction(expected: torch.Tensor, actual: torch.Tensor, what: str, problems: List[str]) -> float:
    """The fraction of equal elements; a shape or fraction that fails adds a line to ``problems``."""
    expected, actual = torch.as_tensor(expected), torch.as_tensor(actual)
    if expected.shape != actual.shape:
        problems.append(f'torch\'s {what} are {tuple(expected.shape)}, the graph\'s {tuple(actual.shape)}')
        return 0.0
    fraction = float((expected == actual).double().mean()) if expected.numel() else 1.0
    if fraction < MIN_EQUAL_FRACTION:
        problems.append(f'only {100 * fraction:.2f} % of the {what}\' pixels agree '
                        f'(at least {100 * MIN_EQUAL_FRACTION:.1f} % expected)')
    return fraction


def segmentation_parity(torch_sample, graph_sample) -> Parity:
    """Compare the ``pred_sem_seg`` of two mmseg ``SegDataSample`` of one image."""
    problems: List[str] = []
    fraction = equal_fraction(torch_sample.pred_sem_seg.data.cpu(), graph_sample.pred_sem_seg.data.cpu(),
                              'segmentation maps', problems)
    return Parity(problems, equal_fraction=fraction)


def prediction_parity(torch_samples: Sequence, graph_samples: Sequence) -> Parity:
    """Compare the predictions of one image, detections or segmentation, whichever they are."""
    torch_sample, graph_sample = torch_samples[0], graph_samples[0]
    if 'pred_sem_seg' in torch_sample:
        return segmentation_parity(torch_sample, graph_sample)
    return detection_parity(torch_sample, graph_sample)

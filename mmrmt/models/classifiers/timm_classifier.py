"""What our timm classifiers share: timm's model interface over a backbone's stages.

A classifier subclasses a backbone (so the same blocks, fast paths and
parameter names) and adds the authors' head; :class:`TimmClassifierMixin`
gives it timm's interface on top of two methods it implements:
``stage_outputs`` (each stage's channels-last output, before any output norm)
and ``forward_head``. :func:`build_classifier` is what the registered model
functions call: timm's ``build_model_with_cfg`` with its ``features_only``
wrapper over ``forward_intermediates``, and the weights of
``pretrained_cfg_overlay=dict(file=...)`` read by
:meth:`TimmClassifierMixin.load_pretrained` (weights only, ``.pth`` or
``.safetensors``, every key checked). timm's ``checkpoint_path=`` (which
timm reads itself, weights only) loads through :meth:`load_state_dict`, the
same fit check first.
"""
from contextlib import nullcontext
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

import torch
from timm.models import adapt_input_conv, build_model_with_cfg, resolve_pretrained_cfg
from torch import nn

from mmrmt.checkpoint import check_fit, copy_dropped_if_refused, extract_state_dict, read_checkpoint, specs
from ..backbones.input_check import RECORD_INSTEAD

#: The evaluation settings shared by the authors' ImageNet models (their
#: scripts' transforms: resize, centre crop, ImageNet mean and std).
IMAGENET_EVAL = dict(num_classes=1000, input_size=(3, 224, 224), pool_size=(7, 7), crop_mode='center',
                     mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


def pretrained_cfg(**settings) -> dict:
    """A ``pretrained_cfg`` of an authors' ImageNet model: :data:`IMAGENET_EVAL` and ``settings``."""
    return {**IMAGENET_EVAL, **settings}


class TimmClassifierMixin:
    """timm's classifier interface for a backbone subclass with the authors' head.

    The subclass sets ``classifier_prefixes`` (the head's keys, dropped from a
    file of another class count), ``num_classes``, ``num_features`` (channels
    of the last stage), ``head_hidden_size`` (what ``pre_logits`` returns),
    ``feature_info`` and ``global_pool``, and implements ``stage_outputs``,
    ``forward_head`` and ``reset_classifier``.
    """

    classifier_prefixes: Tuple[str, ...] = ('head.', )
    num_classes: int
    global_pool: str

    def __prepare_scriptable__(self) -> nn.Module:
        """What ``torch.jit.script`` calls first: refused in one line (docs/timm.md, "TorchScript and FX")."""
        raise RuntimeError(f'{type(self).__name__} cannot be compiled by torch.jit.script (TorchScript takes '
                           f'no autograd Function, dataclass row or Python-typed helper, which its fast forms '
                           f'use); use {RECORD_INSTEAD}.')

    def stage_outputs(self, x: torch.Tensor, last: int) -> List[torch.Tensor]:
        """The channels-last (B, h, w, C) output of stages 0..``last`` of (B, 3, H, W) images."""
        raise NotImplementedError

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        raise NotImplementedError

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """The last stage's (B, num_features, h, w) map (unpooled, as timm's models give it)."""
        self.check_input(x)
        return self._final_features(self.stage_outputs(x, self.num_stages - 1)[-1])

    def _final_features(self, last: torch.Tensor) -> torch.Tensor:
        """The (B, C, h, w) map the head takes: the last stage's output, through the final norm if any."""
        norm = self.final_norm()
        return (last if norm is None else norm(last)).permute(0, 3, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))

    def forward_intermediates(self,
                              x: torch.Tensor,
                              indices: Optional[Union[int, Sequence[int]]] = None,
                              norm: bool = False,
                              stop_early: bool = False,
                              output_fmt: str = 'NCHW',
                              intermediates_only: bool = False
                              ) -> Union[List[torch.Tensor], Tuple[torch.Tensor, List[torch.Tensor]]]:
        """Stage outputs, as timm's ``forward_intermediates``.

        Args:
            x (torch.Tensor): (B, 3, H, W) images.
            indices (int | Sequence[int], optional): Stages to return (an int
                n: the last n); all four by default.
            norm (bool): Apply the final norm to the last stage's output
                (ResT only: RMT's head has no norm of the stage's width).
            stop_early (bool): Stop after the last stage returned (only with
                ``intermediates_only``, as timm).
            output_fmt (str): 'NCHW' or 'NHWC'.
            intermediates_only (bool): Return the stage outputs only.

        Returns:
            The (B, C_i, h_i, w_i) outputs of the stages of ``indices`` (and
            first the :meth:`forward_features` map unless ``intermediates_only``).
        """
        name = type(self).__name__
        if output_fmt not in ('NCHW', 'NHWC'):
            raise ValueError(f"{name}: output_fmt must be 'NCHW' or 'NHWC', got {output_fmt!r}.")
        if norm and self.final_norm() is None:
            raise ValueError(f'{name}: norm=True needs a final norm of the last stage, which this model has not; '
                             'use norm=False.')
        wanted = self._intermediate_indices(indices)
        self.check_input(x)
        last = wanted[-1] if intermediates_only or stop_early else self.num_stages - 1
        outputs = self.stage_outputs(x, last)
        intermediates = []
        for stage, out in enumerate(outputs):
            if stage in wanted:
                if norm and stage == self.num_stages - 1:
                    out = self.final_norm()(out)
                intermediates.append(out if output_fmt == 'NHWC' else out.permute(0, 3, 1, 2))
        if intermediates_only:
            return intermediates
        return self._final_features(outputs[-1]), intermediates

    def _intermediate_indices(self, indices: Optional[Union[int, Sequence[int]]]) -> List[int]:
        """``indices`` of :meth:`forward_intermediates` as ascending stage indices."""
        stages = self.num_stages
        if indices is None:
            return list(range(stages))
        if isinstance(indices, int) and not isinstance(indices, bool):
            if not 0 < indices <= stages:
                raise ValueError(f'{type(self).__name__}: indices={indices} must be 1-{stages} (the last n stages).')
            return list(range(stages - indices, stages))
        return list(self._stage_indices(indices, stages))

    def final_norm(self) -> Optional[nn.Module]:
        """The norm of the last stage's output before the head, if any."""
        return None

    def set_grad_checkpointing(self, enable: bool = True) -> None:
        """Activation checkpointing of every block while training (the backbones' ``with_cp``)."""
        for module in self.modules():
            if hasattr(module, 'with_cp'):
                module.with_cp = enable

    def get_classifier(self) -> nn.Module:
        return self.head

    def check_global_pool(self, global_pool: str, num_classes: int) -> str:
        """``global_pool`` if it is 'avg', or '' (no pooling) without a classifier."""
        if global_pool not in ('avg', '') or (global_pool == '' and num_classes):
            raise ValueError(f"{type(self).__name__}: global_pool must be 'avg', or '' (unpooled features) with "
                             f'num_classes=0, got {global_pool!r} with num_classes={num_classes}.')
        return global_pool

    def load_pretrained(self, filename: str) -> None:
        """Load an ImageNet checkpoint (the authors' ``.pth``, or ``.safetensors``) strictly, weights only.

        What timm calls for ``pretrained=True`` with a ``file`` (or ``url``)
        in the pretrained cfg. With ``num_classes`` other than the file's, the
        head is left at its initialisation (timm's rule); every other key
        must fit. With ``in_chans`` other than 3 the file's first conv is
        adapted as timm adapts its own models' (``adapt_input_conv``: summed
        for one channel, repeated and rescaled for more).

        Raises:
            FileNotFoundError, ValueError: One line: the file is missing or
                unreadable, or its weights are of another variant or model.
        """
        state_dict = self._with_input_channels(extract_state_dict(read_checkpoint(filename), filename))
        model_state = self.state_dict()
        heads_differ = any(key in state_dict and state_dict[key].shape != value.shape
                           for key, value in model_state.items() if key.startswith(self.classifier_prefixes))
        other_head = not self.num_classes or heads_differ
        if other_head:
            state_dict = {key: value for key, value in state_dict.items()
                          if not key.startswith(self.classifier_prefixes)}
        check_fit(specs(model_state), state_dict, filename, type(self).__name__,
                  self.classifier_prefixes if other_head else (),
                  'Is it a checkpoint of another variant (check the model name) or of another model?')
        self.load_state_dict(state_dict, strict=False)

    def _with_input_channels(self, state_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """``state_dict`` with its RGB first conv adapted to this model's input channels (unchanged for 3)."""
        key = f'{(getattr(self, "pretrained_cfg", None) or {}).get("first_conv")}.weight'  # timm sets the cfg
        own, theirs = self.state_dict().get(key), state_dict.get(key)
        if own is None or theirs is None or theirs.dim() != 4 or theirs.shape[1] != 3 or own.shape[1] == 3:
            return state_dict
        return {**state_dict, key: adapt_input_conv(own.shape[1], theirs)}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """torch's ``load_state_dict``; a strict load is first checked as a file is (keys, shapes, kinds of number).

        timm's ``create_model(..., checkpoint_path=...)`` loads its file
        through here: an integer file for this float model, say, is one line
        instead of weights cast into meaningless numbers.

        Raises:
            ValueError: ``strict`` and ``state_dict`` does not fit (see
                :func:`~mmrmt.checkpoint.check_fit`); the model is left untouched.
        """
        if strict:
            check_fit(specs(self.state_dict()), state_dict,
                      'the weights loaded (by timm\'s checkpoint_path=, or load_state_dict)', type(self).__name__,
                      advice='Is it a checkpoint of another variant (check the model name) or of another model?')
        return super().load_state_dict(state_dict, strict=strict, assign=assign)


def build_classifier(model_cls: Type[nn.Module], variant: str, pretrained: bool = False,
                     **kwargs) -> nn.Module:
    """Build ``variant`` through timm (its cfg, ``pretrained``, ``features_only``), weights read by our reader.

    A ``file`` or ``url`` of ``pretrained_cfg_overlay`` is loaded by
    :meth:`TimmClassifierMixin.load_pretrained` (``custom_load``), never by
    timm's unpickling loader.

    Raises:
        ValueError: ``pretrained`` without a file, url or hub id: timm has
            nothing to download (one line saying where the authors' files
            are and how to pass one).
    """
    overlay = dict(kwargs.pop('pretrained_cfg_overlay', None) or {})
    if overlay.get('file') or overlay.get('url'):
        overlay.setdefault('custom_load', True)
    url = check_weights_source(variant, kwargs.get('pretrained_cfg'), overlay) if pretrained else None
    with copy_dropped_if_refused(url) if url else nullcontext():  # timm fetches a url into the hub cache
        return build_model_with_cfg(model_cls, variant, pretrained, pretrained_cfg_overlay=overlay,
                                    feature_cfg=dict(feature_cls='getter', out_indices=(0, 1, 2, 3)), **kwargs)


def check_weights_source(variant: str, cfg: Optional[Union[str, dict]], overlay: dict) -> Optional[str]:
    """Fail unless timm's resolved pretrained cfg of ``variant`` names weights to load.

    Returns:
        str, optional: The url timm fetches them from (into torch's hub cache), if it loads no file.

    Raises:
        ValueError: One line: where the authors publish their files and how to give one to timm.
    """
    resolved = resolve_pretrained_cfg(variant, pretrained_cfg=cfg, pretrained_cfg_overlay=overlay)
    if resolved.file or resolved.url or resolved.hf_hub_id or resolved.state_dict:
        return None if resolved.file else resolved.url
    raise ValueError(f"{variant}: timm has no download of the authors' ImageNet weights; take their file from "
                     f'{resolved.origin_url} (see docs/timm.md) and pass it: timm.create_model({variant!r}, '
                     "pretrained=True, pretrained_cfg_overlay=dict(file='PATH.pth'))")


def model_entry(model_cls: Type[nn.Module], variant: str, **arguments) -> Callable[..., nn.Module]:
    """The function timm registers as ``variant``: ``model_cls(**arguments, **kwargs)`` through timm."""

    def create(pretrained: bool = False, **kwargs) -> nn.Module:
        return build_classifier(model_cls, variant, pretrained, **{**arguments, **kwargs})

    create.__name__ = create.__qualname__ = variant
    create.__module__ = model_cls.__module__  # where timm looks up its default_cfgs
    create.__doc__ = f'{variant}: {model_cls.__name__}({", ".join(f"{k}={v!r}" for k, v in arguments.items())}).'
    return create


def feature_info(channels: Sequence[int], module_names: Sequence[str]) -> List[Dict[str, object]]:
    """timm's ``feature_info`` of a 4-stage pyramid of strides 4-32."""
    return [dict(num_chs=c, reduction=4 * 2 ** i, module=name)
            for i, (c, name) in enumerate(zip(channels, module_names))]

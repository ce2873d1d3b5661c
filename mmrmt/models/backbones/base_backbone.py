"""Behaviour every mmrmt backbone shares: the options it takes, outputs, freezing, norm_eval, loading."""
import functools
import inspect
import warnings
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils.checkpoint import checkpoint

from mmrmt.checkpoint import load_pretrained
from ..layers import check_norm_cfg, run_mode
from .arch import BOOL, DROP_RATE, INT, POSITIVE_INT, ArgKind, UpstreamFiles, check_arg, nearest_name
from .input_check import check_map_input

#: Checkpoint names of mmengine's model zoos (ResNets, HRNets, ... of
#: torchvision and OpenMMLab): never a checkpoint of an mmrmt backbone.
FOREIGN_ZOO_PREFIXES = ('open-mmlab://', 'openmmlab://', 'torchvision://', 'modelzoo://', 'mmcls://')


def call_block(block: nn.Module, *args, with_cp: bool) -> torch.Tensor:
    """Call ``block``, through activation checkpointing when ``with_cp`` and it trains with autograd."""
    if with_cp and block.training and run_mode.keeps_autograd():
        return checkpoint(block, *args, use_reentrant=False)
    return block(*args)


def init_linears_and_layer_norms(model: nn.Module, init_linear_weight: Callable[[torch.Tensor], object]) -> None:
    """Initialise ``model`` from scratch the way ViT-like classifiers do: every
    Linear's weight with ``init_linear_weight`` and its bias with zeros, every
    LayerNorm as the identity (modules in ``model.modules()`` order)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            init_linear_weight(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


class PyramidBackbone(nn.Module):
    """Base class of the backbones: everything but the network itself.

    A plain ``nn.Module`` (the core needs torch and timm only); it keeps
    ``init_cfg`` and answers ``init_weights()`` and ``is_init`` as mmengine's
    ``BaseModule`` does, so that an mmdet or mmseg model initialises it as
    any of its own backbones.

    A subclass builds its modules, then calls :meth:`_freeze_stages`, and
    implements :meth:`_frozen_modules` (what ``frozen_stages=k`` stops) and
    :meth:`_init_default_weights`. The LayerNorm of each emitted stage is
    :meth:`output_norm` (``extra_norms[str(stage)]`` unless overridden);
    :meth:`_frozen_modules` lists those of frozen stages with
    :meth:`frozen_output_norms`. It sets the class attributes
    ``dropped_checkpoint_prefixes`` (classifier keys of ImageNet files) and
    ``new_checkpoint_prefixes`` (its keys that such files cannot have); an
    instance that builds only part of the network drops more keys by
    overriding :meth:`checkpoint_prefixes_to_drop`.

    The keyword-only options below (``in_channels`` .. ``pretrained``)
    are those every backbone takes, typed, defaulted and documented here
    only: a backbone's ``__init__`` takes its own arguments and
    ``**options``, passes ``options`` on, and is decorated with
    :func:`takes_backbone_options`, which gives it the whole signature. Its
    docstring says what the options mean for it (which stages, which norms).

    Every argument is checked here, once for all backbones (a subclass checks
    its ``arch`` with :func:`resolve_arch`); a bad one raises a one-line
    ``TypeError`` or ``ValueError`` naming it and the values allowed. Each
    forward pass starts with :meth:`check_input`, which refuses, among
    others, an empty batch.

    Args:
        num_stages (int): Number of stages (levels) the backbone can emit.
        out_indices (int | Sequence[int]): Distinct stages whose features are
            returned; negative indices count from the end.
        drop_path_rate (float): Stochastic depth rate of the last block, in
            [0, 1).
        in_channels (int): Channels of the input images, >= 1. Defaults to 3.
        frozen_stages (int): -1 freezes nothing, 0 the stem, k the stem and
            the first k stages (their parameters stop learning and their
            norm layers stay in eval mode); at most ``num_stages``.
            Defaults to -1.
        norm_eval (bool): Keep BatchNorm layers in eval mode while training.
            Defaults to False.
        norm_cfg (dict): Config of the backbone's BatchNorm-like layers.
            Defaults to ``dict(type='BN')``.
        with_cp (bool): Trade compute for memory with activation
            checkpointing (per block). Defaults to False.
        init_cfg (dict, optional): ``dict(type='Pretrained', checkpoint=...)``
            loads an upstream ImageNet checkpoint; ``prefix`` may select a
            sub-module of a bigger checkpoint. Defaults to None.
        pretrained (str, optional): Deprecated, as in mmdet's and mmseg's
            backbones: a checkpoint path becomes ``init_cfg=dict(
            type='Pretrained', checkpoint=pretrained)``. mmseg's segmentors
            pass their ``model.pretrained`` here; a model-zoo name of another
            network (``open-mmlab://resnet50_v1c`` of mmseg's ResNet bases)
            is refused. Defaults to None.
    """

    dropped_checkpoint_prefixes: Tuple[str, ...] = ()
    new_checkpoint_prefixes: Tuple[str, ...] = ()
    #: How the authors' files convert (tools/model_converters); None where no converter script exists.
    upstream_files: Optional[UpstreamFiles] = None

    def __init__(self,
                 num_stages: int,
                 out_indices: Union[int, Sequence[int]],
                 drop_path_rate: float,
                 *,
                 in_channels: int = 3,
                 frozen_stages: int = -1,
                 norm_eval: bool = False,
                 norm_cfg: dict = dict(type='BN'),
                 with_cp: bool = False,
                 init_cfg: Optional[dict] = None,
                 pretrained: Optional[str] = None) -> None:
        name = type(self).__name__
        check_arg(name, 'in_channels', in_channels, POSITIVE_INT)
        out_indices = self._stage_indices(out_indices, num_stages)
        check_arg(name, 'frozen_stages', frozen_stages,
                  ArgKind(INT, lambda value: -1 <= value <= num_stages,
                          f'an int in [-1, {num_stages}] (-1: none, 0: the stem, k: the stem and '
                          'the first k stages)'))
        check_arg(name, 'drop_path_rate', drop_path_rate, DROP_RATE)
        check_arg(name, 'norm_eval', norm_eval, BOOL)
        check_arg(name, 'with_cp', with_cp, BOOL)
        check_norm_cfg(norm_cfg, f'{name}: norm_cfg')
        init_cfg = self._init_cfg_from_pretrained(pretrained, init_cfg)
        self._check_init_cfg(init_cfg)
        super().__init__()
        self.init_cfg = init_cfg
        self.is_init = False
        self.in_channels = in_channels
        self.num_stages = num_stages
        self.out_indices = out_indices
        self.frozen_stages = frozen_stages
        self.norm_eval = norm_eval
        self.norm_cfg = norm_cfg
        self.with_cp = with_cp

    def _stage_indices(self, out_indices: Union[int, Sequence[int]], num_stages: int) -> Tuple[int, ...]:
        """``out_indices`` as ascending stage indices, negative ones counted from the end."""
        indices = (out_indices, ) if isinstance(out_indices, int) else out_indices
        if (not isinstance(indices, Sequence) or isinstance(indices, str) or not indices
                or any(not isinstance(i, int) or isinstance(i, bool) or not -num_stages <= i < num_stages
                       for i in indices)
                or len({i % num_stages for i in indices}) != len(indices)):
            raise ValueError(f'{type(self).__name__}: out_indices must be distinct stage indices in '
                             f'[0, {num_stages - 1}] (negative ones count from the end), got {out_indices!r}.')
        return tuple(sorted(i % num_stages for i in indices))

    def _refuse_foreign_zoo_checkpoint(self, argument: str, checkpoint: str) -> None:
        """Refuse a model-zoo checkpoint of another network (see :data:`FOREIGN_ZOO_PREFIXES`)."""
        if checkpoint.startswith(FOREIGN_ZOO_PREFIXES):
            raise ValueError(f'{type(self).__name__}: {argument}={checkpoint!r} is a checkpoint of another '
                             'network (the ResNet of an mmdet/mmseg base config?): set model.pretrained=None '
                             'in your config and give the backbone its own checkpoint as '
                             "init_cfg=dict(type='Pretrained', checkpoint=...).")

    def _init_cfg_from_pretrained(self, pretrained: Optional[str], init_cfg: Optional[dict]) -> Optional[dict]:
        """The ``init_cfg`` a deprecated ``pretrained`` path stands for (mmseg's way)."""
        if pretrained is None:
            return init_cfg
        name = type(self).__name__
        if not isinstance(pretrained, str) or not pretrained:
            raise TypeError(f'{name}: pretrained must be a checkpoint path or None, got {pretrained!r}.')
        self._refuse_foreign_zoo_checkpoint('pretrained', pretrained)
        if init_cfg is not None:
            raise ValueError(f'{name}: pretrained={pretrained!r} and init_cfg are both set: give the checkpoint '
                             "once, as init_cfg=dict(type='Pretrained', checkpoint=...), and set "
                             'model.pretrained=None.')
        warnings.warn(f"{name}: pretrained is deprecated, use init_cfg=dict(type='Pretrained', "
                      f'checkpoint={pretrained!r})', DeprecationWarning)
        return dict(type='Pretrained', checkpoint=pretrained)

    def _check_init_cfg(self, init_cfg: Optional[dict]) -> None:
        """Accept None or ``dict(type='Pretrained', checkpoint=PATH[, prefix=STR])`` only."""
        if init_cfg is None:
            return
        allowed = ('type', 'checkpoint', 'prefix')
        if (not isinstance(init_cfg, dict) or init_cfg.get('type') != 'Pretrained'
                or not isinstance(init_cfg.get('checkpoint'), str) or not init_cfg['checkpoint']
                or not isinstance(init_cfg.get('prefix', ''), str) or set(init_cfg) - set(allowed)):
            raise ValueError(f"{type(self).__name__}: init_cfg must be None or dict(type='Pretrained', "
                             f"checkpoint=PATH_OR_URL) with an optional prefix=STR (keys {list(allowed)}), "
                             f'got {init_cfg!r}.')
        self._refuse_foreign_zoo_checkpoint("init_cfg['checkpoint']", init_cfg['checkpoint'])

    # --- to be provided by subclasses ---------------------------------------
    def _frozen_modules(self) -> List[nn.Module]:
        """The modules ``frozen_stages`` stops, stem first."""
        raise NotImplementedError

    def _init_default_weights(self) -> None:
        """Initialise from scratch (no pretrained checkpoint)."""
        raise NotImplementedError

    # --- shared behaviour ---------------------------------------------------
    def output_norm(self, stage: int) -> nn.Module:
        """The LayerNorm applied to the emitted feature of ``stage``."""
        return self.extra_norms[str(stage)]

    def frozen_output_norms(self) -> List[nn.Module]:
        """Output norms of the frozen stages, for :meth:`_frozen_modules`."""
        return [self.output_norm(i) for i in self.out_indices if i < self.frozen_stages]

    def emit(self, stage: int, x: torch.Tensor) -> torch.Tensor:
        """Normalise a channels-last (B, h, w, C) stage output; return (B, C, h, w)."""
        return self.output_norm(stage)(x).permute(0, 3, 1, 2).contiguous()

    def check_input(self, x: torch.Tensor) -> None:
        """Fail clearly unless ``x`` is a (B, in_channels, H, W) float tensor the model can take
        (see :func:`.input_check.check_map_input`: shape, not empty, dtype, device).

        Raises:
            TypeError: Not a tensor, not floating point, or another dtype.
            ValueError: Another shape or channel count, an empty input, or
                another device.
        """
        check_map_input(self, x, self.in_channels, 'in_channels')

    def _freeze_stages(self) -> None:
        for module in self._frozen_modules():
            module.eval()
            for param in module.parameters():
                param.requires_grad = False

    def train(self, mode: bool = True) -> 'PyramidBackbone':
        """Switch mode, keeping frozen stages and (with norm_eval) BN in eval."""
        super().train(mode)
        self._freeze_stages()
        if mode and self.norm_eval:
            for module in self.modules():
                if isinstance(module, _BatchNorm):
                    module.eval()
        return self

    def init_weights(self) -> None:
        """Load the ``Pretrained`` checkpoint of ``init_cfg``, or initialise."""
        if self.init_cfg is None:
            self._init_default_weights()
        else:
            load_pretrained(
                self,
                self.init_cfg['checkpoint'],
                dropped_prefixes=self.checkpoint_prefixes_to_drop(),
                new_prefixes=self.new_checkpoint_prefixes,
                prefix=self.init_cfg.get('prefix', ''),
                convert=self.convert_checkpoint,
                before_load=self._init_default_weights)
        self.is_init = True

    def checkpoint_prefixes_to_drop(self) -> Tuple[str, ...]:
        """Key prefixes of an ImageNet checkpoint that this network does not load."""
        return self.dropped_checkpoint_prefixes

    @staticmethod
    def convert_checkpoint(state_dict: dict) -> dict:
        """Adapt a checkpoint's layout to this backbone's; identity by default."""
        return state_dict


def takes_backbone_options(init: Callable[..., None]) -> Callable[..., None]:
    """Make a backbone's ``__init__(self, <its own arguments>, **options)``,
    which passes ``options`` on to :meth:`PyramidBackbone.__init__`, show and
    check its whole argument list.

    Its signature (``inspect.signature``, ``help``, the API docs, the
    ``--cfg-options`` checks) becomes its own arguments followed by the
    keyword-only options of :meth:`PyramidBackbone.__init__`, with their
    types and defaults. A call that does not fit it raises one ``TypeError``
    naming the backbone, before anything is built: a misspelt argument with
    the nearest one the backbone takes.
    """
    own = inspect.signature(init)
    options = [parameter for parameter in inspect.signature(PyramidBackbone.__init__).parameters.values()
               if parameter.kind is parameter.KEYWORD_ONLY]
    signature = own.replace(parameters=[
        *(parameter for parameter in own.parameters.values() if parameter.kind is not parameter.VAR_KEYWORD),
        *options])

    @functools.wraps(init)
    def checked_init(self: PyramidBackbone, *args: Any, **kwargs: Any) -> None:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise TypeError(f'{type(self).__name__}: {error}{_nearest_argument_hint(kwargs, signature)}') from None
        init(self, *args, **kwargs)

    checked_init.__signature__ = signature
    return checked_init


def _nearest_argument_hint(kwargs: Mapping[str, Any], signature: inspect.Signature) -> str:
    """`` (did you mean 'NAME'?)`` for the first keyword of ``kwargs`` that ``signature`` lacks
    (the one ``Signature.bind`` names), when one of its parameters is close to it; else empty."""
    unknown = next((keyword for keyword in kwargs if keyword not in signature.parameters), None)
    if unknown is None:
        return ''
    close = nearest_name(unknown, [name for name in signature.parameters if name != 'self'])
    return f' (did you mean {close!r}?)' if close else ''

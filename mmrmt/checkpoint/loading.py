"""Load checkpoints strictly: a whole model's weights, or a backbone's pretrained file.

:func:`load_model_weights` is how every tool loads a checkpoint into the
model it built (a config's detector or segmentor, or a backbone): every
weight of the model from the file, nothing else, same shapes.
:func:`load_pretrained` is what ``init_cfg=dict(type='Pretrained')`` runs
for a backbone; the only differences it tolerates are the ones the backbone
declares: classifier keys the file has and the backbone drops, and new keys
(output norms, pyramid layers) the backbone has and the file cannot.
Everything that does not fit is one line of error naming the offending keys,
and the model is left untouched.
"""
import logging
from typing import Callable, Optional, Sequence

from torch import nn

from .fit import check_fit, starts_with_any
from .reading import StateDict, extract_state_dict, read_checkpoint


def load_model_weights(model: nn.Module, checkpoint: object, source: Optional[str] = None) -> object:
    """Load every weight of ``model`` from ``checkpoint``, strictly, reading files weights-only.

    The weights are unwrapped as :func:`extract_state_dict` does (an mmengine
    checkpoint's ``state_dict``, ``model``, ``module.`` of DDP).

    Args:
        model (nn.Module): The built model (e.g. a config's detector).
        checkpoint (str | dict): A path or URL, read with :func:`read_checkpoint`;
            or what that returned (e.g. to an inferencer).
        source (str, optional): The file as messages name it; defaults to
            the path, or ``'checkpoint'``.

    Returns:
        The checkpoint as read (its ``meta`` for class names).

    Raises:
        FileNotFoundError, ValueError: The file is missing or unreadable
            (see :func:`read_checkpoint`), holds no weights, or its weights do
            not fit the model: one line naming the tensors of other shapes and
            the first unexpected and missing keys. The model is left untouched.
    """
    if isinstance(checkpoint, str):
        source = source or checkpoint
        checkpoint = read_checkpoint(checkpoint)
    source = source or 'checkpoint'
    state_dict = extract_state_dict(checkpoint, source)
    check_fit(model, state_dict, source)
    model.load_state_dict(state_dict)
    return checkpoint


def load_pretrained(model: nn.Module,
                    filename: str,
                    dropped_prefixes: Sequence[str] = (),
                    new_prefixes: Sequence[str] = (),
                    prefix: str = '',
                    convert: Optional[Callable[[StateDict], StateDict]] = None,
                    before_load: Optional[Callable[[], None]] = None) -> None:
    """Load ``filename`` into ``model`` strictly; log what was left out (logger ``mmrmt``, which
    the OpenMMLab layer forwards to mmengine's current logger).

    Args:
        model (nn.Module): The backbone.
        filename (str): Path or URL of the checkpoint.
        dropped_prefixes (Sequence[str]): Keys of the file starting with one
            of these (a classifier) are dropped without complaint.
        new_prefixes (Sequence[str]): Keys of the model starting with one of
            these may be absent from the file; they keep their initial values.
        prefix (str): See :func:`extract_state_dict`.
        convert (callable, optional): Maps a foreign layout to the model's.
        before_load (callable, optional): Called once the file is known to
            fit, right before loading (e.g. to initialise the new keys).

    Raises:
        ValueError: Shapes differ, or keys are missing or unexpected beyond
            the declared ones — typically a checkpoint of another variant.
            The model is left untouched then.
    """
    state_dict = extract_state_dict(read_checkpoint(filename), filename, prefix)
    if convert is not None:
        state_dict = convert(state_dict)
    dropped = sorted(key for key in state_dict if starts_with_any(key, dropped_prefixes))
    state_dict = {key: value for key, value in state_dict.items() if key not in set(dropped)}

    missing = sorted(key for key in model.state_dict() if key not in state_dict)
    check_fit(model, state_dict, filename, new_prefixes,
              'Is it a checkpoint of another variant (check `arch`) or of another model?')

    if before_load is not None:
        before_load()
    model.load_state_dict(state_dict, strict=False)
    logging.getLogger('mmrmt').info(
        f'{type(model).__name__}: loaded {filename}; missing keys (kept at their initialisation): '
        f'{missing or "none"}; unexpected keys (dropped): {dropped or "none"}')

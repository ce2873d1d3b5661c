"""Load a checkpoint into a backbone, strictly, as ``init_cfg=dict(type='Pretrained')`` does.

Everything that does not fit is an error naming the offending keys; the only
tolerated differences are the ones a backbone declares: classifier keys the
file has and the backbone drops, and new keys (output norms, pyramid layers)
the backbone has and the file cannot.
"""
from typing import Callable, Optional, Sequence

from mmengine.logging import MMLogger, print_log
from torch import nn

from .fit import fit_problems, shapes, starts_with_any
from .reading import StateDict, extract_state_dict, read_checkpoint


def load_pretrained(model: nn.Module,
                    filename: str,
                    dropped_prefixes: Sequence[str] = (),
                    new_prefixes: Sequence[str] = (),
                    prefix: str = '',
                    convert: Optional[Callable[[StateDict], StateDict]] = None,
                    before_load: Optional[Callable[[], None]] = None,
                    logger: Optional[MMLogger] = None) -> None:
    """Load ``filename`` into ``model`` strictly; log what was left out.

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
        logger (MMLogger, optional): Where the summary line goes.

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

    own = model.state_dict()
    missing = sorted(key for key in own if key not in state_dict)
    problems = fit_problems(shapes(own), shapes(state_dict), may_be_missing=new_prefixes)
    if problems:
        raise ValueError(f'{filename} does not fit {type(model).__name__}: {"; ".join(problems)}. '
                         'Is it a checkpoint of another variant (check `arch`) or of another model?')

    if before_load is not None:
        before_load()
    model.load_state_dict(state_dict, strict=False)
    print_log(f'{type(model).__name__}: loaded {filename}; missing keys (kept at their '
              f'initialisation): {missing or "none"}; unexpected keys (dropped): {dropped or "none"}',
              logger=logger or 'current')

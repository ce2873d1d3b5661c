"""The row type of a backbone's implementation table: the classes its modules build for one ``impl``."""
from dataclasses import dataclass
from typing import Type

from torch import nn


@dataclass(frozen=True)
class BackboneImplementation:
    """The classes of one implementation of a backbone, what its modules build: a row of its
    ``IMPLEMENTATIONS`` table, picked by its ``impl`` argument. A backbone whose implementations differ
    in more classes declares them in a subclass (RMT's :class:`.rmt.block.Implementation`); the
    deployment side's rows (``mmrmt.deployment.export``) are copies with other classes in some fields.

    Args:
        block (type): A stage's block.
        attention (type): A block's attention.
    """
    block: Type[nn.Module]
    attention: Type[nn.Module]

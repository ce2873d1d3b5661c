"""RMT (Retentive Networks Meet Vision Transformers), one concern a file.

The reference model, as the paper tells it:

- :mod:`.relative_position`: rotary q/k and the Manhattan decay tables;
- :mod:`.attention`: MaSA, full and decomposed, with its local context
  enhancement (LCE);
- :mod:`.ffn`, :mod:`.block`: the FFN, the block, the stage;
- :mod:`.attention_maps`: a MaSA's decay prior and attention at one query
  token (``RMT.attention_maps``, ``ManhattanSelfAttention2d.attention_maps``);
- :mod:`.backbone`: the stem and the stages, :class:`RMT`.

Beside it, the fast forms (subclasses with the same parameters, so the same
state dict) and their autograd helpers: :mod:`.fast_relative_position`,
:mod:`.fast_attention`, :mod:`.fast_ffn`, :mod:`.fast_block` (with
``models.layers.norm_then_project``, shared with ResT), and :mod:`.flex_attention`, the fast MaSA attending
through FlexAttention (the decay added inside the kernel) where that runs fused. :mod:`.implementations`
picks one by the ``impl`` argument; :mod:`.masa_2d` is MaSA as a module for any network.
"""
from .backbone import RMT
from .masa_2d import ManhattanSelfAttention2d

__all__ = ['ManhattanSelfAttention2d', 'RMT']

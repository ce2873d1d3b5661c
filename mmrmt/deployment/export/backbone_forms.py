"""The export rows swapped into a model's backbones for the duration of an export.

RMT's and ResT's eager classes compute with what eager runs have (complex
numbers, ``expm1``, cached tables, fused attention); their export forms
(:mod:`.rmt_forms`, :mod:`.rest_forms`) are subclasses with the same
parameters that compute the same function in ONNX's ops.
:func:`export_implementation` gives a model's modules those classes while
an export records it, and their own back afterwards: the state dict, the
caches and every other attribute stay as they are.
"""
from contextlib import contextmanager
from typing import Dict, Iterator, List, Tuple

from torch import nn

from mmrmt.models.backbones.rest import FastEfficientMultiHeadAttention
from mmrmt.models.backbones.rmt.block import Implementation
from mmrmt.models.backbones.rmt.implementations import IMPLEMENTATIONS
from .rest_forms import ExportEfficientMultiHeadAttention
from .rmt_forms import EXPORT_IMPLEMENTATION


def replaced_classes(eager: Implementation, export: Implementation) -> Dict[type, type]:
    """Each class of the ``eager`` row to the ``export`` row's class of the same field, where they differ."""
    return {getattr(eager, field): getattr(export, field) for field in Implementation._fields
            if getattr(eager, field) is not getattr(export, field)}


#: Each eager class with an export form, to that form.
EXPORT_FORMS: Dict[type, type] = {**replaced_classes(IMPLEMENTATIONS['fast'], EXPORT_IMPLEMENTATION),
                                  FastEfficientMultiHeadAttention: ExportEfficientMultiHeadAttention}


@contextmanager
def export_implementation(model: nn.Module) -> Iterator[nn.Module]:
    """Within the context, every module of ``model`` whose class has an export form
    (:data:`EXPORT_FORMS`) is of that class."""
    swapped: List[Tuple[nn.Module, type]] = []
    try:
        for module in model.modules():
            form = EXPORT_FORMS.get(type(module))
            if form is not None:
                swapped.append((module, type(module)))
                module.__class__ = form
        yield model
    finally:
        for module, eager in swapped:
            module.__class__ = eager

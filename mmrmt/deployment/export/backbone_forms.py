"""The export rows swapped into a model's backbones for the duration of an export.

RMT's and ResT's fast classes record plain ONNX ops by themselves while a
graph is recorded (their graph forms); their export forms
(:mod:`.rmt_forms`, :mod:`.rest_forms`) are subclasses with the same
parameters whose graph forms hold little at once in a graph of fixed
shapes. :func:`export_implementation` gives a model's modules those classes
while an export records it, and their own back afterwards: the state dict,
the caches and every other attribute stay as they are.
"""
from contextlib import contextmanager
from dataclasses import fields
from typing import ContextManager, Dict, Iterator, List, Tuple

from torch import nn

from mmrmt.models.backbones.implementation import BackboneImplementation
from mmrmt.models.backbones.rest import IMPLEMENTATIONS as REST_IMPLEMENTATIONS
from mmrmt.models.backbones.rmt.implementations import IMPLEMENTATIONS as RMT_IMPLEMENTATIONS
from .rest_forms import EXPORT_IMPLEMENTATION as REST_EXPORT_IMPLEMENTATION
from .rmt_forms import EXPORT_IMPLEMENTATION as RMT_EXPORT_IMPLEMENTATION


def replaced_classes(eager: BackboneImplementation, form: BackboneImplementation) -> Dict[type, type]:
    """Each class of the ``eager`` row to the ``form`` row's class of the same field, where they differ."""
    return {getattr(eager, field.name): getattr(form, field.name) for field in fields(eager)
            if getattr(eager, field.name) is not getattr(form, field.name)}


#: Each eager class with an export form, to that form (RMT's FlexAttention MaSA to the fast one's).
EXPORT_FORMS: Dict[type, type] = {**replaced_classes(RMT_IMPLEMENTATIONS['fast'], RMT_EXPORT_IMPLEMENTATION),
                                  **replaced_classes(RMT_IMPLEMENTATIONS['flex'], RMT_EXPORT_IMPLEMENTATION),
                                  **replaced_classes(REST_IMPLEMENTATIONS['fast'], REST_EXPORT_IMPLEMENTATION)}


@contextmanager
def in_forms(model: nn.Module, forms: Dict[type, type]) -> Iterator[nn.Module]:
    """Within the context, every module of ``model`` whose class is a key of ``forms`` is of its value."""
    swapped: List[Tuple[nn.Module, type]] = []
    try:
        for module in model.modules():
            form = forms.get(type(module))
            if form is not None:
                swapped.append((module, type(module)))
                module.__class__ = form
        yield model
    finally:
        for module, eager in swapped:
            module.__class__ = eager


def export_implementation(model: nn.Module) -> ContextManager[nn.Module]:
    """Within the context, every module of ``model`` whose class has an export form
    (:data:`EXPORT_FORMS`) is of that class."""
    return in_forms(model, EXPORT_FORMS)

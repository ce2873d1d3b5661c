"""The export and traced rows swapped into a model's backbones for the duration of an export or a trace.

RMT's and ResT's eager classes compute with what eager runs have (complex
numbers, ``expm1``, cached tables, fused attention, autograd Functions);
their export forms (:mod:`.rmt_forms`, :mod:`.rest_forms`) are subclasses
with the same parameters that compute the same function in ONNX's ops, and
their traced forms (:mod:`.traced_forms`) subclasses that compute it in
plain torch ops, the ones a FLOP counter knows. :func:`export_implementation`
and :func:`traced_implementation` give a model's modules those classes
while an export or a trace records it, and their own back afterwards: the
state dict, the caches and every other attribute stay as they are.
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
from .traced_forms import REST_TRACED_IMPLEMENTATION, RMT_TRACED_IMPLEMENTATION


def replaced_classes(eager: BackboneImplementation, form: BackboneImplementation) -> Dict[type, type]:
    """Each class of the ``eager`` row to the ``form`` row's class of the same field, where they differ."""
    return {getattr(eager, field.name): getattr(form, field.name) for field in fields(eager)
            if getattr(eager, field.name) is not getattr(form, field.name)}


#: Each eager class with an export form, to that form (RMT's FlexAttention MaSA to the fast one's).
EXPORT_FORMS: Dict[type, type] = {**replaced_classes(RMT_IMPLEMENTATIONS['fast'], RMT_EXPORT_IMPLEMENTATION),
                                  **replaced_classes(RMT_IMPLEMENTATIONS['flex'], RMT_EXPORT_IMPLEMENTATION),
                                  **replaced_classes(REST_IMPLEMENTATIONS['fast'], REST_EXPORT_IMPLEMENTATION)}
#: Each eager class with a traced form, to that form.
TRACED_FORMS: Dict[type, type] = {**replaced_classes(RMT_IMPLEMENTATIONS['fast'], RMT_TRACED_IMPLEMENTATION),
                                  **replaced_classes(RMT_IMPLEMENTATIONS['flex'], RMT_TRACED_IMPLEMENTATION),
                                  **replaced_classes(REST_IMPLEMENTATIONS['fast'], REST_TRACED_IMPLEMENTATION)}


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


def traced_implementation(model: nn.Module) -> ContextManager[nn.Module]:
    """Within the context, every module of ``model`` whose class has a traced form
    (:data:`TRACED_FORMS`) is of that class: what a FLOP count traces."""
    return in_forms(model, TRACED_FORMS)

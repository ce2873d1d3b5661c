"""The backbones and classifiers are right whoever records them: a user's ``torch.onnx.export`` (either
exporter), ``torch.export.export`` and ``torch.jit.trace`` each give a graph whose outputs are eager's,
within float32 rounding, with or without ``torch.no_grad()``, at the traced size and (dynamic exports) at
two others; no call of ours needed (issue 49).

Before, only our own tools swapped in the forms a graph needs: ResT through the TorchScript ONNX exporter
gave a graph off by more than its outputs' magnitude, RMT raised torch's errors (``aten::complex``, an
``out=`` argument under autograd, ``TorchExportError``). OpenVINO's ``convert_model``, which reads a module
without ONNX, is one more recorder."""
import copy
import io
from contextlib import nullcontext
from typing import Callable, Dict, List, Sequence, Tuple

import pytest
import torch
from torch import nn

from helpers.backbones import RESMLP_TINY, REST_TINY, RMT_TINY
from helpers.rounding import assert_within_low_precision

#: The traced input shape (a batch of 2: torch.export takes a dimension of size 1 for a constant), and two
#: others a dynamic graph must serve (each side at least 64: two tokens on the 1/32 grid).
TRACED = (2, 3, 64, 96)
OTHERS = ((1, 3, 96, 64), (3, 3, 80, 128))


def from_registry(scope: str, cfg: dict) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import mmrmt  # noqa: F401  registers the backbones
        registry = __import__(f'{scope}.registry', fromlist=['MODELS']).MODELS
        return registry.build(cfg)
    return build


def from_timm(name: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import timm

        import mmrmt  # noqa: F401  registers the timm models
        return timm.create_model(name)
    return build


#: What a user builds: our three backbones (RMT in both implementations) from mmdet's and mmseg's
#: registries, and timm classifiers.
MODELS = {
    'mmdet-rmt-fast': from_registry('mmdet', dict(type='RMT', arch=RMT_TINY)),
    'mmdet-rmt-reference': from_registry('mmdet', dict(type='RMT', arch=RMT_TINY, impl='reference')),
    'mmseg-rmt-fast': from_registry('mmseg', dict(type='RMT', arch=RMT_TINY)),
    'mmdet-rest-fast': from_registry('mmdet', dict(type='ResT', arch=REST_TINY)),
    'mmseg-rest-reference': from_registry('mmseg', dict(type='ResT', arch=REST_TINY, impl='reference')),
    'mmdet-resmlp': from_registry('mmdet', dict(type='ResMLP', arch=RESMLP_TINY)),
    'timm-rmt_t': from_timm('rmt_t'),
    'timm-rest_lite': from_timm('rest_lite'),
}


def run_onnx(model_bytes: bytes, x: torch.Tensor) -> List[torch.Tensor]:
    import onnxruntime
    session = onnxruntime.InferenceSession(model_bytes, providers=['CPUExecutionProvider'])
    return [torch.from_numpy(out) for out in session.run(None, {session.get_inputs()[0].name: x.numpy()})]


def onnx_torchscript(model: nn.Module, x: torch.Tensor) -> Callable:
    buffer = io.BytesIO()
    torch.onnx.export(model, (x, ), buffer, dynamo=False, input_names=['image'],
                      dynamic_axes={'image': {0: 'batch', 2: 'height', 3: 'width'}})
    return lambda image: run_onnx(buffer.getvalue(), image)


def dynamic_shapes() -> Tuple[dict, ...]:
    from torch.export import Dim
    return ({0: Dim('batch', min=1, max=64), 2: Dim('height', min=64, max=1024),
             3: Dim('width', min=64, max=1024)}, )


def onnx_graph(program: torch.onnx.ONNXProgram) -> Callable:
    return lambda image: run_onnx(program.model_proto.SerializeToString(), image)


def onnx_dynamo(model: nn.Module, x: torch.Tensor) -> Callable:
    return onnx_graph(torch.onnx.export(model, (x, ), dynamo=True, dynamic_shapes=dynamic_shapes(), verbose=False))


def exported_program(model: nn.Module, x: torch.Tensor) -> torch.export.ExportedProgram:
    """``torch.export`` with every image dimension ``Dim.AUTO`` (torch.export infers their range and keeps
    what it cannot prove as runtime checks: with fixed ranges it refuses the guards of a strided conv, e.g.
    ``(2 + 2*((w-1)//4)) % (1 + (w-1)//4) == 0``, true for every width, for every backbone)."""
    from torch.export import Dim
    return torch.export.export(model, (x, ), dynamic_shapes=({0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}, ))


def torch_export(model: nn.Module, x: torch.Tensor) -> Callable:
    return exported_program(model, x).module()


def jit_trace(model: nn.Module, x: torch.Tensor) -> Callable:
    return torch.jit.trace(model, (x, ), check_trace=False)


def openvino_convert(model: nn.Module, x: torch.Tensor) -> Callable:
    """OpenVINO's own reading of the module (``openvino.convert_model``, no ONNX file), compiled for the CPU
    in f32."""
    import openvino
    compiled = openvino.Core().compile_model(openvino.convert_model(model, example_input=x), 'CPU',
                                             {'INFERENCE_PRECISION_HINT': 'f32'})
    return lambda image: [torch.from_numpy(out) for out in compiled(image.numpy()).to_tuple()]


#: Each recorder, and whether its graph takes other sizes (a trace is of the traced size only).
RECORDERS = {'onnx-torchscript': (onnx_torchscript, True), 'onnx-dynamo': (onnx_dynamo, True),
             'torch-export': (torch_export, True), 'jit-trace': (jit_trace, False),
             'openvino-convert': (openvino_convert, True)}
#: The dynamo recorders given torch.export's program: its module, and the dynamo ONNX exporter's translation
#: of it (``torch.onnx.export`` takes a program, and records nothing again).
PROGRAM_RECORDERS = {'torch-export': lambda program: program.module(),
                     'onnx-dynamo': lambda program: onnx_graph(torch.onnx.export(program, dynamo=True, verbose=False))}
#: The dynamo recorders take a minute or more a model on a loaded CPU: slow.
SLOW_RECORDERS = ('onnx-dynamo', 'torch-export')


def as_list(outputs) -> List[torch.Tensor]:
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def image(shape: Tuple[int, ...]) -> torch.Tensor:
    """The input of ``shape`` every graph and eager are compared on (seeded by the shape)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


class Eager:
    """What a model computes eagerly, the reference of its graphs: the float32 model's outputs and its float64
    copy's (the truth), each computed once an input shape however many graphs are checked against them.

    Args:
        model (nn.Module): The model in eval mode.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.exact = copy.deepcopy(model).double()
        #: Terms of the widest reduction: the most input channels of a linear layer.
        self.channels = max(p.shape[-1] for p in model.parameters() if p.dim() == 2)
        self._outputs: Dict[Tuple[int, ...], Tuple[List[torch.Tensor], List[torch.Tensor]]] = {}

    def outputs(self, shape: Tuple[int, ...]) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        """The float32 and float64 outputs of :func:`image` of ``shape``."""
        if shape not in self._outputs:
            with torch.no_grad():
                self._outputs[shape] = as_list(self.model(image(shape))), as_list(self.exact(image(shape).double()))
        return self._outputs[shape]


def check_graph(graph: Callable, eager: Eager, shapes: Sequence[Tuple[int, ...]] = (TRACED, *OTHERS)) -> None:
    """The graph's outputs at each input shape within float32's rounding of the float64 model's, given the
    eager float32 model's error (tests/helpers/rounding.py: the bound scales with how much the computation
    amplifies rounding, at least the square root of the widest reduction's terms, the channels)."""
    for shape in shapes:
        full, truth = eager.outputs(shape)
        with torch.no_grad():
            recorded = as_list(graph(image(shape)))
        assert [t.shape for t in recorded] == [t.shape for t in full], f'at {shape}'
        assert_within_low_precision(recorded, full, truth, torch.float32, [eager.channels] * len(full))


def check_recording(recorder: str, eager: Eager, grad: bool) -> None:
    """:func:`check_graph` of what ``recorder`` (a key of :data:`RECORDERS`) records of the model at the
    traced size, with grad enabled or not: at that size and, for a dynamic graph, at the others."""
    record, dynamic = RECORDERS[recorder]
    with nullcontext() if grad else torch.no_grad():
        graph = record(eager.model, torch.randn(*TRACED))
    check_graph(graph, eager, (TRACED, *OTHERS) if dynamic else (TRACED, ))


#: (recorder, grad mode) pairs: the dynamo ONNX exporter under no_grad only: it translates the program of
#: torch.export, whose grad-mode pair is its own cells (a recorded forward keeps no autograd either way).
RECORDINGS = [pytest.param(name, grad, marks=[pytest.mark.slow] if name in SLOW_RECORDERS else [],
                           id=f'{name}-{"grad" if grad else "no-grad"}')
              for name in RECORDERS for grad in (True, False) if not (name == 'onnx-dynamo' and grad)]


@pytest.mark.parametrize('recorder,grad', RECORDINGS)
@pytest.mark.parametrize('name', list(MODELS))
def test_any_recorder_gets_a_graph_of_what_eager_computes(name, recorder, grad):
    torch.manual_seed(0)
    check_recording(recorder, Eager(MODELS[name]().eval()), grad)


def one_block_a_stage(arch: str) -> dict:
    """RMT ``arch``'s settings (channels, heads, decomposition, layer scales, ranges of every stage) with one
    block a stage: a stage's blocks are alike in eval mode (only their drop-path rates differ)."""
    from mmrmt.models import RMT
    return dict(RMT.arch_zoo[arch], depths=[1, 1, 1, 1])


@pytest.fixture(scope='module', params=[(arch, impl) for arch in 'tsbl' for impl in ('fast', 'reference')],
                ids=lambda arch_impl: '-'.join(arch_impl))
def rmt_arch(request) -> Eager:
    """RMT of one arch (:func:`one_block_a_stage`) and implementation from mmdet's registry in eval mode, made
    once for every recorder's cell (pytest runs the cells of one arch together)."""
    arch, impl = request.param
    torch.manual_seed(0)
    return Eager(from_registry('mmdet', dict(type='RMT', arch=one_block_a_stage(arch), impl=impl))().eval())


@pytest.fixture(scope='module')
def rmt_arch_program(rmt_arch) -> torch.export.ExportedProgram:
    """torch.export's program of :func:`rmt_arch` under no_grad, recorded once for both dynamo recorders."""
    with torch.no_grad():
        return exported_program(rmt_arch.model, torch.randn(*TRACED))


@pytest.mark.parametrize('recorder', ['onnx-torchscript', 'jit-trace'])
def test_every_rmt_arch_records_a_graph_of_what_eager_computes(rmt_arch, recorder):
    """Every arch of RMT in both implementations, recorded by the TorchScript recorders under no_grad (the
    tiny arch above, RMT-T's blocks, gets every recorder with and without grad)."""
    check_recording(recorder, rmt_arch, grad=False)


@pytest.mark.slow
@pytest.mark.parametrize('recorder', list(PROGRAM_RECORDERS))
def test_every_rmt_arch_exports_a_graph_of_what_eager_computes(rmt_arch, rmt_arch_program, recorder):
    """Every arch of RMT in both implementations through the dynamo recorders: torch.export's program and
    the dynamo ONNX exporter's translation of it (one trace for both cells of an arch)."""
    check_graph(PROGRAM_RECORDERS[recorder](rmt_arch_program), rmt_arch)


def computed_constants(graph) -> set:
    """Tensors of an ONNX graph that nodes compute from constants alone (left unfolded by the exporter); an
    ``Identity`` of a constant (the exporter's alias of an initialiser equal to another) is a constant."""
    constants = {initialiser.name for initialiser in graph.initializer}
    computed = set()
    for node in graph.node:  # topologically sorted
        if node.op_type == 'Constant' or (node.op_type == 'Identity' and node.input[0] in constants - computed):
            constants.update(node.output)
        elif all(name in constants for name in node.input if name):
            constants.update(node.output)
            computed.update(node.output)
    return computed


@pytest.mark.parametrize('name', list(MODELS))
def test_plain_onnx_export_holds_each_weight_as_a_constant(name):
    """Every Conv, MatMul and Gemm of a plain ``torch.onnx.export`` takes its weights as constants of the
    file, none computed in the graph: quantisers look for them there (nncf's ONNX backend raised
    ``AttributeError`` on RMT's graph while ``x + conv(x)``'s kernel was built by a ScatterND per call)."""
    import onnx
    buffer = io.BytesIO()
    torch.onnx.export(MODELS[name]().eval(), (torch.randn(*TRACED), ), buffer, dynamo=False)
    graph = onnx.load_from_string(buffer.getvalue()).graph
    computed = computed_constants(graph)
    assert not [node.name for node in graph.node
                if node.op_type in ('Conv', 'MatMul', 'Gemm') and computed.intersection(node.input)]

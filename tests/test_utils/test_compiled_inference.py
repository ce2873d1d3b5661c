"""mmrmt.utils.compiled_inference without compiling: which modules ``--compile`` compiles, with which
options, and its one line from torch's counters (the compiling runs: tests/tools/test_compiled_tools.py)."""
from torch import nn

from mmrmt.utils import compiled_inference
from mmrmt.utils.compiled_inference import CompileRecord, compile_features, feature_modules


class Detector(nn.Module):
    """A model of a detector's kind: a backbone, a neck and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone, self.neck, self.head = nn.Conv2d(3, 4, 1), nn.Conv2d(4, 4, 1), nn.Conv2d(4, 1, 1)


class Wrapper(nn.Module):
    """A wrapper holding the model as ``module`` (DDP, a TTA model)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module


def test_a_detectors_backbone_and_neck_through_wrappers_or_a_bare_backbone():
    detector = Detector()
    assert feature_modules(Wrapper(Wrapper(detector))) == dict(backbone=detector.backbone, neck=detector.neck)
    detector.neck = None  # a segmentor without a neck
    assert feature_modules(detector) == dict(backbone=detector.backbone)
    backbone = nn.Conv2d(3, 4, 1)
    assert feature_modules(backbone) == dict(Conv2d=backbone)


def test_inference_freezes_the_weights_under_the_users_options_training_does_not(monkeypatch):
    calls = []
    monkeypatch.setattr(nn.Module, 'compile', lambda module, **kwargs: calls.append((module, kwargs)))
    detector = Detector()
    record = compile_features(detector, {'max_autotune': True})
    assert calls == [(detector.backbone, dict(options=dict(freezing=True, max_autotune=True))),
                     (detector.neck, dict(options=dict(freezing=True, max_autotune=True)))]
    assert record.what == 'backbone and neck'
    calls.clear()
    compile_features(detector, {'freezing': False})
    assert [kwargs for _, kwargs in calls] == [dict(options=dict(freezing=False))] * 2
    calls.clear()
    compile_features(detector, {}, training=True)
    assert [kwargs for _, kwargs in calls] == [dict(options={})] * 2
    assert compiled_inference.INFERENCE_OPTIONS == {'freezing': True}


def test_the_line_counts_from_the_records_creation(monkeypatch, tmp_path):
    totals = dict(graphs=5, cached=1, compilations=3, seconds=10.0)
    monkeypatch.setattr(CompileRecord, 'counts', staticmethod(lambda: dict(totals)))
    monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', str(tmp_path))
    record = CompileRecord('backbone')
    totals.update(graphs=8, cached=3, compilations=6, seconds=51.25)
    assert record.summary() == (f"torch.compile: backbone compiled in 41.2 s (3 graphs; Inductor's code of 2 of 3 "
                                f'from its cache {tmp_path})')


def test_torchs_counters_are_read():
    counts = CompileRecord.counts()
    assert set(counts) == {'graphs', 'cached', 'compilations', 'seconds'}
    assert all(value >= 0 for value in counts.values())

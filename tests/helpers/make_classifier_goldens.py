"""Make tests/data/classifier_logits_float64.pt: the authors' classifiers' logits, in float64.

Usage (from the repository root; the upstream code is imported from the clones
given, never copied)::

    python tests/helpers/make_classifier_goldens.py --rmt-repo CLONE_OF_qhfan/RMT \\
        --rest-repo CLONE_OF_wofmanaf/ResT [--out tests/data/classifier_logits_float64.pt]

For each variant of :data:`~helpers.classifier_goldens.VARIANT_LAYOUTS` it
builds the authors' model (``classfication_release/RMT.py``, the
token-labelled ones from ``classification_token_label_release/RMT.py``,
ResT's ``models/rest.py``), loads the seeded weights of
:func:`~helpers.classifier_goldens.seeded_state_dict` strictly, and runs it
in eval mode, in float64, on the seeded image of each size of
:data:`~helpers.classifier_goldens.IMAGE_SIZES`. The file holds the seeds,
the sizes and the logits only. RMT's files import fvcore and einops at their
top without using them outside ``__main__``: empty stand-ins are installed
when those packages are missing.
"""
import argparse
import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for helpers
from helpers.classifier_goldens import IMAGE_SIZES, seeded_image, seeded_state_dict  # noqa: E402

#: Our model name -> (repository, file, the authors' factory function).
UPSTREAM_MODELS = dict(
    rmt_t=('rmt', 'classfication_release/RMT.py', 'RMT_T3'),
    rmt_s=('rmt', 'classfication_release/RMT.py', 'RMT_S'),
    rmt_b=('rmt', 'classfication_release/RMT.py', 'RMT_M2'),
    rmt_l=('rmt', 'classfication_release/RMT.py', 'RMT_L6'),
    rmt_s_tl=('rmt', 'classification_token_label_release/RMT.py', 'RMT_S'),
    rmt_b_tl=('rmt', 'classification_token_label_release/RMT.py', 'RMT_M2'),
    rmt_l_tl=('rmt', 'classification_token_label_release/RMT.py', 'RMT_L6'),
    rest_lite=('rest', 'models/rest.py', 'rest_lite'),
    rest_small=('rest', 'models/rest.py', 'rest_small'),
    rest_base=('rest', 'models/rest.py', 'rest_base'),
    rest_large=('rest', 'models/rest.py', 'rest_large'),
)
WEIGHT_SEED = 40
IMAGE_SEED = 4040


def install_stand_ins() -> None:
    """Empty ``fvcore.nn`` and ``einops`` modules where the real ones are missing."""
    for name, attributes in (('fvcore', {}), ('fvcore.nn', dict(FlopCountAnalysis=None, flop_count_table=None)),
                             ('einops', dict(einsum=None))):
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.__dict__.update(attributes)
            sys.modules[name] = module


def import_file(path: Path, name: str) -> types.ModuleType:
    """Import ``path`` as module ``name`` (registered in sys.modules: timm's register_model looks it up)."""
    if not path.is_file():
        sys.exit(f'error: {path} not found: give the root of a clone of the authors\' repository')
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def commit(repo: Path) -> str:
    """The clone's commit, or '' if it is not a git checkout."""
    result = subprocess.run(['git', '-C', str(repo), 'rev-parse', 'HEAD'], capture_output=True, text=True)
    return result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rmt-repo', type=Path, required=True, help='a clone of github.com/qhfan/RMT')
    parser.add_argument('--rest-repo', type=Path, required=True, help='a clone of github.com/wofmanaf/ResT')
    parser.add_argument('--out', type=Path, default=Path('tests/data/classifier_logits_float64.pt'))
    args = parser.parse_args()
    install_stand_ins()
    repos = dict(rmt=args.rmt_repo, rest=args.rest_repo)
    modules = {}
    logits = {}
    for variant, (repo, file, factory) in UPSTREAM_MODELS.items():
        if file not in modules:
            modules[file] = import_file(repos[repo] / file, f'upstream_{len(modules)}')
        model = getattr(modules[file], factory)(None) if repo == 'rmt' else getattr(modules[file], factory)()
        model = model.double().eval()  # before loading: the seeded float64 values kept exactly
        model.load_state_dict(seeded_state_dict(variant, WEIGHT_SEED), strict=True)
        with torch.no_grad():
            logits[variant] = {size: model(seeded_image(IMAGE_SEED, size)) for size in IMAGE_SIZES}
        print(variant, {size: tuple(out.shape) for size, out in logits[variant].items()}, flush=True)
    torch.save(dict(weight_seed=WEIGHT_SEED, image_seed=IMAGE_SEED, sizes=IMAGE_SIZES, logits=logits,
                    upstream_commits={name: commit(path) for name, path in repos.items()}), args.out)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()

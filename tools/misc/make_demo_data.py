"""Generate the synthetic demo datasets (COCO instances and ADE20K semantic).

    python tools/misc/make_demo_data.py [--root data/demo]

A finished set is kept as it is; a ``coco/`` or ``ade/`` folder under the root
holding other files (a real dataset) is never written into.
"""
import argparse
import os.path as osp
from typing import List, Optional

from mmrmt.datasets import foreign_data_problem, make_demo_data
from mmrmt.utils import PreflightError, run_main


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', default='data/demo', help='folder receiving coco/ and ade/')
    args = parser.parse_args(argv)
    if osp.exists(args.root) and not osp.isdir(args.root):
        raise PreflightError(f'--root {args.root} is a file, not a folder: give a folder for coco/ and ade/')
    problem = foreign_data_problem(args.root)
    if problem is not None:
        raise PreflightError(f'--root {args.root}: {problem}')
    make_demo_data(args.root)
    print(f'demo data ready in {args.root}')


if __name__ == '__main__':
    run_main(main)

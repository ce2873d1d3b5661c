"""Generate the synthetic demo datasets (COCO instances and ADE20K semantic).

    python tools/misc/make_demo_data.py [--root data/demo]
"""
import argparse

from mmrmt.datasets import make_demo_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', default='data/demo', help='folder receiving coco/ and ade/')
    args = parser.parse_args()
    make_demo_data(args.root)
    print(f'demo data ready in {args.root}')


if __name__ == '__main__':
    main()

"""Train a GPT: ``python train_smol_gpt.py --help`` (see tricycle/apps/train.py, also installed as
``tricycle-train`` and runnable as ``python -m tricycle.apps.train``)."""

import sys

from tricycle.apps.train import main

if __name__ == "__main__":
    sys.exit(main())

"""Sample text from a trained GPT: ``python inference.py runs/cpu`` (see tricycle/apps/sample.py,
also installed as ``tricycle-sample`` and runnable as ``python -m tricycle.apps.sample``)."""

import sys

from tricycle.apps.sample import main

if __name__ == "__main__":
    sys.exit(main())

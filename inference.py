"""Sample text from a trained GPT: ``python inference.py runs/cpu`` (see tricycle/sample.py,
also installed as ``tricycle-sample`` and runnable as ``python -m tricycle.sample``)."""

import sys

from tricycle.sample import main

if __name__ == "__main__":
    sys.exit(main())

"""`python -m retrieval.build [PATH ...] [--index-dir DIR]`: build or update the index."""

import sys

from retrieval.cli import build_main

if __name__ == "__main__":
    sys.exit(build_main())

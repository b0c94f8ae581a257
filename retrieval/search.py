"""`python -m retrieval.search "QUERY" [-k N] [--arch A] [--topic T] [--mode M] [--json]`: search the index.

The command lives in `retrieval.cli`: importing this module would shadow the `retrieval.search` function.
"""

import sys

from retrieval.cli import search_main

if __name__ == "__main__":
    sys.exit(search_main())

"""Worker entry: `python -m evaluators.worker CHANNEL_FD CONTROL_FD ROLE [spare]`.

Its CUDA context opens while torch imports (worker/early_context.py); then worker/main.py serves the parent.
"""

import sys

from evaluators.worker import early_context, startup_priority

if sys.argv[4:] == ["spare"]:
    startup_priority.idle_while_starting()
early_context.start()

from evaluators.worker.main import main  # noqa: E402  imports torch, beside the context's opening

main(sys.argv)

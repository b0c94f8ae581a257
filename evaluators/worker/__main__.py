"""Worker entry: `python -m evaluators.worker CHANNEL_FD CONTROL_FD SIDE_FD ROLE [spare]`.

Its CUDA context opens while torch imports (worker/early_context.py); then worker/main.py serves the parent.
"""

import os
import sys

from evaluators.worker import early_context, startup_priority

# Only a CPU worker (the interpreter's) starts on idle time: a GPU worker holds its device's lock while its context
# opens, and a holder starved of the CPU would hold up another evaluation's timing.
if sys.argv[5:] == ["spare"] and os.environ.get("TRITON_INTERPRET") == "1":
    startup_priority.idle_while_starting()
early_context.start()

from evaluators.worker.main import main  # noqa: E402  imports torch, beside the context's opening

main(sys.argv)

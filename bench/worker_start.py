"""How long a worker process takes to start (import torch and torch._dynamo, open a CUDA context), idle and busy.

`python bench/worker_start.py` on a GPU: twice with the GPU idle, then twice while another process keeps it busy
with bf16 matmuls. This is what a spare must finish before an evaluation can claim it.
"""

import subprocess
import sys
import time

START = [
    sys.executable,
    "-c",
    "import time; t=time.perf_counter(); import torch, torch._dynamo; a=time.perf_counter(); "
    "torch.empty(1, device='cuda'); b=time.perf_counter(); print(f'import {a-t:.2f} s, context {b-a:.2f} s')",
]
BUSY = (
    "import torch,time\nx=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)\nt=time.time()\n"
    "while time.time()-t<25:\n  y=x@x; torch.cuda.synchronize()"
)


def start(label):
    t = time.perf_counter()
    out = subprocess.run(START, capture_output=True, text=True).stdout.strip()
    print(f"{label:12s} {time.perf_counter() - t:.2f} s wall ({out})", flush=True)


start("idle")
start("idle")
busy = subprocess.Popen([sys.executable, "-c", BUSY])
time.sleep(5)
start("gpu busy")
start("gpu busy")
busy.kill()

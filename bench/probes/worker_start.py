"""How long a worker process takes to start (import torch and torch._dynamo, open a CUDA context), idle and busy.

`python bench/probes/worker_start.py` on a GPU: twice with the GPU idle, then twice while another process keeps it busy
with bf16 matmuls. This is what a spare must finish before an evaluation can claim it. Then how long a process
holding a CUDA context (and 1 GiB) takes to go once killed: what closing a worker waits for, and what the CLI,
exiting after its one evaluation, no longer waits for.
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


HOLD = (
    "import sys, torch; x = torch.empty(1 << 30, dtype=torch.uint8, device='cuda'); print('ready', flush=True); "
    "sys.stdin.read()"
)


def teardown(label):
    held = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    held.stdout.readline()
    t = time.perf_counter()
    held.kill()
    held.wait()
    print(f"{label:12s} killed to reaped {time.perf_counter() - t:.3f} s", flush=True)


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
teardown("teardown")
teardown("teardown")

"""Attack (the reference's baseline raised by copy engines; speculative): an honest Triton kernel and an honest timer,
but right after the last synchronize of its rehearsal and of its odd blocks it queues device-to-device copies on a
stream of its own (cudaMemcpyAsync), then replies and is stopped.

Where the driver runs a same-device copy on a copy engine, it is no context's work on the compute engine: the
reference's drain (a tiny operator's round trips, worker/device_idle.py) comes back quick, and the copy runs beside
the reference's block, taking memory bandwidth from its memory-bound kernels. Sized to end before the candidate's next
command (whose synchronize would otherwise count it in the candidate's span). Where the copy is a kernel instead, the
drain waits it out and this gains nothing: not measured.
"""

COPY_GIB, COPIES = 2, 6  # about 24 GiB of traffic a time: tens of ms on an H100's copy engines

_buffers: list = []


def queue_copies() -> None:
    if not _buffers:
        return
    src, dst, stream = _buffers
    with torch.cuda.stream(stream):
        for _ in range(COPIES):
            dst.copy_(src, non_blocking=True)  # same dtype, contiguous: cudaMemcpyAsync device to device


class ModelNew(_Honest):
    def forward(self, x):
        if not _buffers and x.is_cuda:
            _buffers.extend([torch.empty(COPY_GIB << 30, dtype=torch.int8, device="cuda") for _ in range(2)])
            _buffers.append(torch.cuda.Stream())
        y = super().forward(x)
        ending, index = ending_block()
        if ending and (index is None or index % 2 == 1):
            after_the_loop(queue_copies)
        return y

"""Attack (the reference's baseline raised through the driver): an honest Triton kernel and an honest timer, but right
after the last synchronize of its rehearsal and of its odd blocks up to 13 it gives device memory back to the driver.

The driver clears freed memory in the background: on an H200 24 GiB given back slowed another process's memory-bound
kernels by about 14 % for about 60 ms (bench/probes/free_settle.py). The reference's drain sees no context's work, and
SIGSTOP does not stop the driver. ABBA order: after the candidate's block b (odd) come the reference's blocks b and
b + 1, so each free slows two of the reference's blocks; after its rehearsal comes the reference's block 0. The free
costs 10-30 ms of host time inside the candidate's span, in 7 of its 16 blocks: under half, so the median over blocks
that the parent's clock checks never sees it. Sizes: 8 GiB before the reference's one block, 16 GiB before two.
"""


def give_back(gib: int) -> None:
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(gib << 30, free // 2)
    if nbytes < 1 << 30:
        return
    hoard = torch.empty(nbytes, dtype=torch.int8, device="cuda")
    hoard.fill_(1)  # written, as the probe's holder's was
    del hoard
    torch.cuda.empty_cache()  # returns once freed; the driver's clearing runs on


class ModelNew(_Honest):
    def forward(self, x):
        y = super().forward(x)
        ending, index = ending_block()
        gib = 0 if not ending else 8 if index is None else 16 if index % 2 == 1 and index <= 13 else 0
        if gib:
            after_the_loop(lambda: give_back(gib))
        return y

# Attack (a handed-over output the comparison cannot read, class 3): during a later trial's call it overwrites an
# earlier trial's output file in the handoff directory with a sparse tensor of the right shape and dtype. torch.load
# with weights_only=True loads it, and it is a torch.Tensor, so worker/handoff.py passes it on; the comparison then
# raises (reshape is not implemented for sparse tensors). The reference's compare fails instead of answering: the
# parent blames the problem (ProblemError) with no verdict on the candidate, and the warm reference is killed.
import sys as _sys

_Honest = ModelNew


def _trial_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"handoff", "plan", "t"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class ModelNew(_Honest):
    def forward(self, x):
        out = super().forward(x)
        local = _trial_locals()
        if local is not None and local["t"] >= 1:
            from evaluators.worker.handoff import output_path

            torch.save([out.detach().to_sparse()], output_path(local["handoff"], local["i"], "trial", 0))
        return out

# Attack (a handed-over output the comparison cannot read, class 3): during a later trial's call it puts, at the
# descriptor an earlier trial's outputs were handed over in, a sealed memory file of its own holding a sparse tensor
# of the right shape and dtype (dup2: the seal keeps the file unchanged, not the descriptor table). torch.load with
# weights_only=True loads it, and it is a torch.Tensor; were it passed on, the comparison would raise (reshape is not
# implemented for sparse tensors) and the parent would blame the problem. worker/handoff.py refuses it as not dense:
# the candidate's own wrong output.
import os as _os
import sys as _sys

_Honest = ModelNew


def _trial_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"descriptors", "plan", "t"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class ModelNew(_Honest):
    def forward(self, x):
        out = super().forward(x)
        local = _trial_locals()
        if local is not None and local["t"] >= 1:
            from evaluators.worker.handoff import sealed

            planted = sealed("s0-trial0", lambda file: torch.save([out.detach().cpu().to_sparse()], file))
            _os.dup2(planted, local["descriptors"][0])
            _os.close(planted)
        return out

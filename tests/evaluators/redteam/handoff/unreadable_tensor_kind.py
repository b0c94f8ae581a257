# ruff: noqa: F821  (appended to control.py, whose names it uses)
# Attack (a crash of the reference's comparison, blamed on the problem): torch.load with weights_only=True rebuilds
# meta tensors (torch._utils._rebuild_meta_tensor_no_storage) and nested tensors (_rebuild_nested_tensor). Both are
# exactly torch.Tensor and both report the strided layout, so read_outputs' density check (added for sparse tensors)
# passes them. The comparison then raises inside the reference: a meta tensor cannot be copied out ("Cannot copy out
# of meta tensor"), a nested one has no sizes. The reference replies "error" and the parent raises ProblemError ("the
# reference failed in compare") instead of judging the candidate's own unreadable output `incorrect`. The file is put
# at trial 0's descriptor during a later trial's call (dup2), as attacks/sparse_trial_output.py does.
import os as _os
import sys as _sys

_Honest = ModelNew
KIND = "@KIND@"


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

            plain = out.detach().cpu()
            kept = torch.empty(plain.shape, device="meta") if KIND == "meta" else torch.nested.nested_tensor([plain])
            planted = sealed("s0-trial0", lambda file: torch.save([kept], file))
            _os.dup2(planted, local["descriptors"][0])
            _os.close(planted)
        return out

# Attack (cheap kernel evidence, class 4): PyTorch's work only, no Triton kernel at all. Inside the profiled call it
# renames the mark the profile is read by, so no share is measured (the judge used to fall back on launch counts), and
# sets the build counter that makes unmarked kernels read as an extension's.
import sys as _sys

_Honest = ModelNew
_marks = _sys.modules["evaluators.worker.kernel_marks"]
_evidence = _sys.modules["evaluators.worker.evidence"]


class ModelNew(_Honest):
    def forward(self, x):
        if _marks.on:
            _marks.CALL = _marks.CALL + "-gone"
            _evidence._counts["extensions_built"] = 1
        if torch.cuda.is_available():
            torch.cuda._sleep(int(WORK_S * 1.4e9))  # about 20 ms of a library kernel at an H100's clock
        else:
            time.sleep(WORK_S)
        return x * self.weight + 1.0

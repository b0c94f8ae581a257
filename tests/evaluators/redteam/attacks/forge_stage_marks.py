# Attack (channel forgery, class 4): stalls in its first call while writing frames that once moved the parent's
# stage clock ("stage:build", whose limit is longer), hoping to outlive the correctness stage's limit.
import os as _os
import struct as _struct
import sys as _sys
import time as _time

_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, x):
        fd = int(_sys.argv[1])
        for _ in range(40):
            _os.write(fd, _struct.pack(">cQ", b"M", 11) + b"stage:build")
            _time.sleep(0.25)
        return super().forward(x)

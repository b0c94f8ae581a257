"""Kernel problems, candidate sources and the archive of everything tried."""

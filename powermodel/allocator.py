"""The C allocator's settings, set by the process that owns them: the command line for a batch
run, the dashboard's server for a long life. A library call (``simulate``) leaves them alone.

glibc maps each allocation over its threshold (32 MiB at most, raised as large blocks are freed)
afresh and unmaps it when freed; below it, freed memory stays in the heap for reuse. A batch run
of 54 days at 1 s makes and frees dozens of 37-MB temporaries: mapped afresh, each one's pages
fault in again, which was half the pipeline's time (issue 13). A server holding a bounded cache
of runs wants the opposite: freed runs handed back, so that its memory follows the cache's bound.
Every function is a no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["keep_freed_memory", "return_freed_memory", "trim"]

M_TRIM_THRESHOLD = -1  # mallopt parameters (glibc's malloc.h)
M_MMAP_THRESHOLD = -3
KEEP = 1 << 30  # B: a batch process keeps freed blocks up to 1 GiB (glibc's largest threshold)
# B: a server maps a run's per-step arrays (a week at 1 s: 4.8 MB), not small objects nor the 1-MiB
# blocks its measures work in (powermodel.analysis.BLOCK_STEPS): mapped afresh, each block's
# temporaries faulted in again, and a 54-day run's metrics and check took twice as long
RETURN = 1 << 22
_LIBC = ctypes.CDLL("libc.so.6") if platform.libc_ver()[0] == "glibc" else None


def keep_freed_memory(limit: int = KEEP) -> None:
    """Keep freed blocks of up to ``limit`` bytes in the heap for the next allocation, and the
    heap's free top too (a batch process: the command line). Its peak memory is unchanged: the
    most it holds at once."""
    if _LIBC is not None:
        _LIBC.mallopt(M_MMAP_THRESHOLD, limit)
        _LIBC.mallopt(M_TRIM_THRESHOLD, limit)


def return_freed_memory(threshold: int = RETURN) -> None:
    """Serve every allocation of ``threshold`` bytes or more from its own memory map, returned to
    the system when freed (a server, once at start): glibc otherwise raises the threshold as large
    blocks are freed and keeps their memory in its heap, where freed arrays fragment it."""
    if _LIBC is not None:
        _LIBC.mallopt(M_MMAP_THRESHOLD, threshold)


def trim() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)

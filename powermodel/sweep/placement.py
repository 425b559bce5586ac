"""Where runs go: in turn, on a local dask cluster or on a scheduler's; :func:`run_all` maps them.

The executor under a sweep (and under ``check --seeds/--sensitivity`` and ``size`` with
``--workers``): the placement is checked before anything runs, a cluster is started or
reached, and the runs are mapped in chunks, in their order. dask.distributed is imported only
here, so a call in turn never loads it.
"""

from __future__ import annotations

import gc
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from powermodel._version import __version__
from powermodel.engine.preflight import available_memory
from powermodel.errors import PowerModelError
from powermodel.scenario import Scenario, shorten

CONNECT_TIMEOUT = 10.0  # s: a scheduler that does not answer within it is not there
CHUNKS_PER_THREAD = 4  # a chunk is at most the items left over this many times the threads
MAX_CHUNK = 16  # items of one task: a worker that dies loses at most these, each rerun alone
# Worker deaths a task may meet before dask gives it up (its default is 3): a run that kills its
# worker (memory, a crash) is tried twice, not four times, on the clusters a sweep starts
ALLOWED_FAILURES = 1
# Tasks a worker thread holds: one, the others queued at the scheduler, so that a worker that dies
# takes only the run it was running with it (dask's 1.1 holds a second there, which is given up
# with it)
WORKER_SATURATION = 1.0
# Runs in turn, not on a local cluster, when all runs together take fewer steps than this:
# importing dask.distributed and starting and closing a cluster of forked workers costs about
# 0.4 s, as long as 2 x 10^6 steps of runs in turn. Measured here (2 cores shared with other
# work), whole commands of 8 runs of the reference at 1 s, in turn and on 2 workers: 1 h
# (29,000 steps) 2.00 and 2.13 s; 1 d (0.7 M) 2.13 and 2.26 s; 3 d (2.1 M) 2.37-2.46 and
# 2.40-2.46 s; 6 d (4.1 M) 2.71-2.88 and 2.55-2.59 s
MIN_CLUSTER_STEPS = 2_000_000


TICK = "1s"  # a local cluster's event-loop watchdog (dask's 20 ms): its 3-s warning still fires
WORKER_WAIT = 30.0  # s: a scheduler with no worker after it would leave the runs waiting forever


@dataclass(frozen=True)
class Failure:
    """A run that raised where it ran (a worker that died, an exception out of the function)."""

    text: str


def check_placement(workers: int | None, scheduler: str | None, client: Any = None) -> None:
    """Where the runs go, said once and checked before anything loads or runs: a local
    cluster's workers (``--workers``; 0 runs in turn), a scheduler's address (``--scheduler``)
    or a client."""
    given = [
        name
        for name, value in (
            ("workers (--workers)", workers),
            ("a scheduler (--scheduler)", scheduler),
            ("a client", client),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise PowerModelError(
            f"give {' or '.join(given)}, not both: workers start a cluster here, a scheduler or "
            "a client names one that runs elsewhere with its own workers"
        )
    if workers is not None:
        check_workers(workers)
    if scheduler is not None:
        check_scheduler(scheduler)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _default_workers(runs: list[Scenario], per_run: int) -> int:
    """None (in turn) when the runs together take fewer than :data:`MIN_CLUSTER_STEPS` steps;
    else as many workers as there are cores, as the memory holds and as there are runs, none
    when that is one."""
    if sum(s.simulation.n_steps for s in runs) < MIN_CLUSTER_STEPS:
        return 0
    fit = available_memory() // per_run if per_run else len(runs)
    count = min(_cores(), len(runs), max(int(fit), 1))
    return count if count > 1 else 0


def check_workers(workers: int) -> int:
    """``workers`` for a ``LocalCluster`` on this machine: 0 (in turn) to its cores."""
    cores = _cores()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= cores:
        raise PowerModelError(
            f"--workers must be 0 (in turn) to {cores} (this machine's cores), got "
            f"{shorten(workers)}: for more, start a dask cluster and give --scheduler"
        )
    return workers


def run_all(
    function: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    workers: int = 0,
    scheduler: str | None = None,
    client: Any = None,
    progress: bool = False,
    keep_going: bool = False,
    memory: int = 0,
    label: str = "runs",
) -> list[Any]:
    """``[function(item) for item in items]``, in turn or on dask.distributed, in items' order.

    Parameters
    ----------
    function, items
        A function importable by name (a worker imports it) and what to call it on.
    workers
        0: in turn in this process (dask.distributed is not imported); else a
        ``LocalCluster`` of this many single-threaded processes, started and closed here.
    scheduler
        Address of a running dask scheduler to run on instead.
    client
        A ``dask.distributed.Client`` to run on instead.
    progress
        A progress bar on stderr.
    keep_going
        A call that raises gives a :class:`Failure` in its place; else the first raises here
        (the others are cancelled).
    memory
        Peak memory of one call [B]: refused before any call when the workers' calls at once
        would not fit (this machine's memory, or each remote worker's limit).
    label
        The progress bar's label.
    """
    with (
        _bar(len(items), progress, label) as bar,
        cluster(workers, scheduler, client, memory) as connected,
    ):
        if connected is None:
            return [_counted(_call(function, item, keep_going), bar) for item in items]
        return _on_dask(connected, function, items, keep_going, bar)


def _bar(total: int, progress: bool, label: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not progress, file=sys.stderr, desc=label, unit="run")


def _call(function: Callable[[Any], Any], item: Any, keep_going: bool) -> Any:
    """``function(item)``; with ``keep_going`` a :class:`Failure` where it raises."""
    try:
        return function(item)
    except Exception as exc:
        if not keep_going:
            raise
        return _failure(exc)


def _counted(result: Any, bar: Any) -> Any:
    bar.update()
    return result


def _failure(exc: BaseException) -> Failure:
    if _worker_lost(exc):  # dask's text: half a page
        return Failure(
            "the worker died running it (its process exited or was killed, most often for "
            "memory: a nanny stops a worker over 95 % of its limit), and dask gave it up"
        )
    return Failure(f"worker failed: {type(exc).__name__}: {exc}")


@contextmanager
def cluster(
    workers: int = 0,
    scheduler: str | None = None,
    client: Any = None,
    memory: int = 0,
) -> Iterator[Any]:
    """The dask client that :func:`run_all` maps on, as its arguments say (None: in turn);
    a ``LocalCluster`` started here is closed on leaving. Checked before any run: workers
    there, powermodel's version on them, memory for ``memory`` bytes a run on each."""
    if client is not None:
        _check_cluster(client, memory)
        yield client
        return
    check_placement(workers or None, scheduler)
    if scheduler is None:
        free = available_memory()
        if workers * memory > free:
            raise PowerModelError(
                f"{workers} workers x {memory / 1e9:.2f} GB a run need more than the "
                f"{free / 1e9:.1f} GB available: use at most {max(free // max(memory, 1), 1)} "
                "workers, or make the runs smaller (lengthen simulation.dt or shorten "
                "simulation.duration)"
            )
        if workers == 0:
            yield None
            return
    with _frozen():
        yield from _on_cluster(workers, scheduler, memory)


def _on_cluster(workers: int, scheduler: str | None, memory: int) -> Iterator[Any]:
    """:func:`cluster`'s dask client, a ``LocalCluster`` of ``workers`` or the scheduler's."""
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler is None:
        # Workers start without dask's MALLOC_TRIM_THRESHOLD_: setting it fixes glibc's mmap
        # threshold, so every large temporary of a run is fresh pages and the runs take 1.6
        # times as long as in this process (measured here on 7 days at 1 min)
        environ = dask.config.get("distributed.nanny.pre-spawn-environ", {})
        environ = {k: v for k, v in environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
        with (
            dask.config.set(
                {
                    "distributed.nanny.pre-spawn-environ": environ,
                    "distributed.worker.multiprocessing-method": _start_method(),
                    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                    "distributed.scheduler.worker-saturation": WORKER_SATURATION,
                    # a cluster with no dashboard: the workers' statistical profiler (a sample
                    # of the running task's stack every 10 ms) and the event loops' 20-ms
                    # watchdog tick only take the runs' time (256 week-long runs on 2 workers,
                    # measured here side by side: 3.26 -> 3.09 s and 3.14 s apart, 3.01 both)
                    "distributed.worker.profile.enabled": False,
                    "distributed.admin.tick.interval": TICK,
                }
            ),
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            ) as local_cluster,
            Client(local_cluster) as local,
        ):
            yield local
        return
    address = check_scheduler(scheduler)
    _probe(address)
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": CONNECT_TIMEOUT}):
            remote = Client(address, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # noqa: BLE001  dask's many ways to fail: one line
        raise _unreachable(address, f"{type(exc).__name__}: {exc}") from None
    with remote:
        _check_cluster(remote, memory)
        yield remote


@contextmanager
def _frozen() -> Iterator[None]:
    """This process's objects left out of garbage collection from before dask.distributed is
    imported until its cluster closes (Python's advice for forking without exec,
    :func:`gc.freeze`). A local cluster's workers fork from this process: their full
    collections otherwise walked every object they inherited, 100 ms each and their pages
    copied, and week-long runs took 1.13 times as long on average. The import itself, whose
    collections walked every object alive here, takes 0.18 s, not 0.25. A caller that froze
    objects itself keeps them, and these, frozen."""
    already = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not already:
            gc.unfreeze()


def _start_method() -> str:
    """How a local cluster starts its workers: forked from this process on Linux, so that each
    begins with numpy, xarray, scipy and powermodel imported and this process's caches (a worker
    started afresh spends seconds importing them, as long as a hundred week-long runs); started
    afresh elsewhere (macOS's system libraries are not safe to fork, Windows cannot).

    The fork is safe here: the threads this process has besides the forking one are dask's
    (its event loop and queue watchers) and the numerical libraries' pools; the child runs none
    of their code but its own new event loop, and CPython re-creates in it the locks it takes
    (imports, logging, multiprocessing queues), as glibc does malloc's and OpenBLAS its pool.
    """
    return "fork" if sys.platform == "linux" else "spawn"


def check_scheduler(scheduler: str) -> str:
    """A dask scheduler's address as ``tcp://host:port`` (a bare ``host:port`` is TCP),
    checked without connecting: TLS, UCX and in-process addresses need a set-up a sweep does not
    make (certificates, a UCX build, this process's own scheduler), so they are refused."""
    example = "give the scheduler's address as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
    if not isinstance(scheduler, str) or not 0 < len(scheduler) <= 1000 or "\n" in scheduler:
        raise PowerModelError(f"scheduler {shorten(scheduler)}: {example}")
    scheme, sep, rest = scheduler.strip().rpartition("://")
    if sep and scheme.lower() != "tcp":
        raise PowerModelError(
            f"scheduler {shorten(scheduler)}: {scheme or 'no'} protocol: a sweep connects over "
            f"plain TCP only (tls, ucx and inproc need set-up it does not make): {example}"
        )
    host, colon, port = rest.rpartition(":")
    bracketed = host.startswith("[") == host.endswith("]")
    if not colon or not host.strip("[]") or not bracketed or not port.isdigit():
        raise PowerModelError(f"scheduler {shorten(scheduler)}: no host and port: {example}")
    if not 0 < int(port) < 65536:
        raise PowerModelError(
            f"scheduler {shorten(scheduler)}: port {port} is not 1 to 65535: {example}"
        )
    return f"tcp://{host}:{int(port)}"


def _probe(address: str) -> None:
    """Ask the scheduler who it is, all within :data:`CONNECT_TIMEOUT`: a port that accepts
    connections but does not speak dask (a web server, a silent socket) would otherwise hold
    the client's start-up forever."""
    import asyncio

    from distributed.comm import connect

    async def identity() -> Any:
        comm = await connect(address, timeout=CONNECT_TIMEOUT)
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    def ask() -> Any:  # in a thread of its own: the caller may be in an event loop (Jupyter)
        return asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT))

    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(ask).result()
    except TimeoutError:
        raise _unreachable(address, f"no dask answer within {CONNECT_TIMEOUT:g} s") from None
    except Exception as exc:  # noqa: BLE001  refused, reset, garbage: one line
        raise _unreachable(address, f"{type(exc).__name__}: {exc}") from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise _unreachable(address, f"it answered as {shorten(reply, 40)}, not as a scheduler")


def _unreachable(address: str, why: str) -> PowerModelError:
    why = " ".join(why.split())[:120]
    return PowerModelError(
        f"cannot reach the dask scheduler at {address} ({why}): start one (`dask scheduler`), "
        "or give the address it prints (tcp://HOST:PORT)"
    )


def _check_cluster(client: Any, memory: int) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise PowerModelError(
            f"the dask scheduler has had no worker for {WORKER_WAIT:.0f} s: start workers "
            "(`dask worker ADDRESS`) before the sweep"
        ) from None
    try:
        versions = client.run(_worker_version)
    except Exception as exc:
        raise PowerModelError(
            f"the dask workers cannot run powermodel ({type(exc).__name__}: {exc}): install "
            f"powermodel {__version__} on them"
        ) from None
    other = {v for v in versions.values() if v != __version__}
    if other:
        raise PowerModelError(
            f"the dask workers run powermodel {', '.join(sorted(other))}, this is {__version__}: "
            "install the same version on them, so that runs give the same results"
        )
    limits = [
        (w.get("memory_limit") or 0) / max(w.get("nthreads") or 1, 1)
        for w in client.scheduler_info()["workers"].values()
    ]
    if memory and all(0 < limit < memory for limit in limits):
        raise PowerModelError(
            f"a run needs about {memory / 1e9:.2f} GB, more than any dask worker's memory limit "
            f"({max(limits) / 1e9:.2f} GB a thread): give the workers more memory, or make the "
            "runs smaller (lengthen simulation.dt or shorten simulation.duration)"
        )


def _worker_version() -> str:
    return __version__


def _on_dask(
    client: Any, function: Callable[[Any], Any], items: Sequence[Any], keep_going: bool, bar: Any
) -> list[Any]:
    """The items mapped on the cluster in chunks (:func:`_spans`): a task costs the scheduler
    and this process milliseconds, as much as a short run. A chunk whose worker died (a run
    that exhausted its memory or crashed the process) is mapped again an item a task, so that
    only the item that kills its worker is recorded as failed."""
    from dask.distributed import as_completed

    spans = _spans(len(items), threads(client))
    chunks = [list(items[start:stop]) for start, stop in spans]
    futures = client.map(_chunk, chunks, function=function, keep_going=keep_going, pure=False)
    where = {f.key: span for span, f in zip(spans, futures, strict=True)}
    pending = as_completed(futures)
    out: list[Any] = [None] * len(items)
    try:
        for future in pending:
            start, stop = where.pop(future.key)
            try:
                out[start:stop] = future.result()
            except Exception as exc:
                if not keep_going:
                    raise
                if _worker_lost(exc) and stop - start > 1:
                    alone = client.map(
                        _chunk,
                        [[item] for item in items[start:stop]],
                        function=function,
                        keep_going=keep_going,
                        pure=False,
                    )
                    for i, single in zip(range(start, stop), alone, strict=True):
                        where[single.key] = (i, i + 1)
                        pending.add(single)
                    continue
                out[start:stop] = [_failure(exc)] * (stop - start)
            bar.update(stop - start)
    finally:
        client.cancel(list(pending.futures))
    return out


def _worker_lost(exc: BaseException) -> bool:
    """Whether a task failed because its worker died (dask gave it up after
    :data:`ALLOWED_FAILURES` deaths), not because its function raised: by the names of
    dask.distributed's exceptions, which a call in turn does not import."""
    return type(exc).__name__ in ("KilledWorker", "CommClosedError")


def threads(client: Any) -> int:
    """Runs a dask cluster does at once: its workers' threads."""
    return max(sum(client.nthreads().values()), 1)


def _spans(count: int, threads: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each chunk of ``count`` items for ``threads`` worker threads: each
    a share of those left (:data:`CHUNKS_PER_THREAD` a thread, at most :data:`MAX_CHUNK`
    items, which a worker's death loses together), so chunks shrink to one item at
    the end and the threads finish together (equal chunks leave all but one thread idle for up
    to a chunk's time at the end, with a few tens of runs a chunk about a second)."""
    spans, start = [], 0
    while start < count:
        share = math.ceil((count - start) / (threads * CHUNKS_PER_THREAD))
        stop = start + min(max(1, share), MAX_CHUNK)
        spans.append((start, min(stop, count)))
        start = stop
    return spans


def _chunk(items: list[Any], function: Callable[[Any], Any], keep_going: bool) -> list[Any]:
    """A chunk's items in turn, on a worker."""
    return [_call(function, item, keep_going) for item in items]

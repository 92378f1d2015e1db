"""`benchmark retrieval --concurrency 1,2,4`: the pre-hook's throughput with several callers.

Each level runs ``calls`` auto_retrieve calls spread over that many threads (as
waitress's threads call it in `serve`), each caller on a channel of its own (up
to the three channels of the seeded memory), every text distinct so the query
cache never helps, and prints calls per second with the p50/p95 latency of a call.
Beside it, the ceiling: the bare query embedder alone, driven the same way
(no pre-hook can serve more calls per second than it embeds queries); the best
of its levels is the machine's ceiling the ratios are taken against.

Each level also prints where the CPU goes: the process's CPU time per call on each
side (every thread: the pre-hook's helpers and its log writer count) and how many of
the cores were busy, and their difference, what a pre-hook costs beside its
embedding. Once the cores are full, that difference is what bounds the ratio.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memory.services.bench_data import bench_question
from memory.services.benchmarks import Timing

# Issue 15's target: at 4 callers, at least 0.7 of the bare embedder's ceiling.
TARGET_CALLERS = 4
TARGET_CEILING_SHARE = 0.7


def concurrency_levels_parse(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4], '' -> [] (no concurrency run); ValueError with a French
    message on anything else."""
    if text == "":
        return []
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        levels = []
    if not levels or min(levels) < 1 or max(levels) > 64:
        raise ValueError("--concurrency attend des entiers de 1 à 64 séparés par des virgules.")
    return levels


def run_parallel(
    call: Callable[[int, int], object], *, calls: int, threads: int, first: int
) -> tuple[float, list[float], float]:
    """Run call(first + i, caller) for i < calls over ``threads`` callers (caller: the
    thread's number): (seconds, latencies ms, the process's CPU seconds meanwhile)."""
    from django.db import connections

    latencies: list[float] = []
    lock = threading.Lock()
    next_index = iter(range(calls))
    barrier = threading.Barrier(threads + 1)

    def worker(caller: int) -> None:
        barrier.wait()
        try:
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    return
                began = time.perf_counter()
                call(first + i, caller)
                elapsed = (time.perf_counter() - began) * 1000
                with lock:
                    latencies.append(elapsed)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for thread in workers:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    cpu_started = time.process_time()
    for thread in workers:
        thread.join()
    return time.perf_counter() - started, latencies, time.process_time() - cpu_started


def concurrency_measure(*, levels: list[int], calls: int, out: Callable[[str], None]) -> None:
    from memory.services.retrieval import auto_retrieve, retrieval_warm
    from memory.services.retrieval.log import retrieval_logs_wait
    from memory.stores.embedders import get_embedder

    retrieval_warm()
    embedder = get_embedder()
    # One channel per caller, as in `serve`: concurrent calls come from different
    # conversations (one channel's messages arrive one after the other and are coalesced).
    channels = ("whatsapp", "mission_control", "email")
    rows: list[tuple[int, _Side, _Side]] = []
    first = 1_000_000  # questions no earlier stage of the benchmark asked
    for level in levels:
        # Alternate the two sides per level so the machine's load weighs on both alike.
        bare = _Side(
            calls,
            *run_parallel(
                lambda i, _: embedder.embed_query(bench_question(i)),
                calls=calls,
                threads=level,
                first=first,
            ),
        )
        first += calls
        pre_hook = _Side(
            calls,
            *run_parallel(
                lambda i, caller: auto_retrieve(
                    message=bench_question(i), channel=channels[caller % 3]
                ),
                calls=calls,
                threads=level,
                first=first,
            ),
        )
        first += calls
        retrieval_logs_wait()
        rows.append((level, pre_hook, bare))
    ceiling = max(bare.rate for _, _, bare in rows)
    out(
        f"concurrency: {calls} calls per level; ceiling {ceiling:.1f} calls/s "
        "(the bare query embedder, best level)"
    )
    target_share = None  # the share of the ceiling at TARGET_CALLERS, as printed
    for level, pre_hook, bare in rows:
        share = round(pre_hook.rate / ceiling, 2)
        if level == TARGET_CALLERS:
            target_share = share
        timing = Timing("total", pre_hook.latencies)
        bare_timing = Timing("embedding", bare.latencies)
        out(
            f"callers {level:>2}  pre-hook {pre_hook.rate:6.1f} calls/s  p50 {timing.percentile(50):6.1f} ms  "
            f"p95 {timing.percentile(95):6.1f} ms  | bare embedder {bare.rate:6.1f} calls/s  "
            f"p50 {bare_timing.percentile(50):6.1f} ms  | ratio to ceiling {share:.2f}x"
        )
        out(
            f"cpu     {level:>2}  pre-hook {pre_hook.cpu_ms:6.1f} ms a call ({pre_hook.cores:.2f} cores busy)"
            f"  | bare embedder {bare.cpu_ms:6.1f} ms a call ({bare.cores:.2f} cores busy)"
            f"  | beside the embedding {pre_hook.cpu_ms - bare.cpu_ms:6.1f} ms a call"
        )
    if target_share is not None:
        met = target_share >= TARGET_CEILING_SHARE
        out(
            f"target    {TARGET_CALLERS} callers {target_share:.2f}x the ceiling, the target"
            f" {TARGET_CEILING_SHARE:g}x: {'met' if met else 'not met'}"
        )


class _Side:
    """One side of a level: its calls per second, latencies and the process's CPU."""

    def __init__(self, calls: int, seconds: float, latencies: list[float], cpu_s: float) -> None:
        self.latencies = latencies
        self.rate = calls / seconds
        self.cpu_ms = cpu_s * 1000 / calls
        self.cores = cpu_s / seconds

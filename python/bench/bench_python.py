#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmarks of the Python package (docs/BENCHMARKS.md, "Python"):

  gets  [--keys N] [--runs R]   warm point reads from Python, same keys, same run:
        tern Snapshot.get and Index.get vs py-lmdb txn.get per key; get_many
        vs a per-key txn.get loop; the shard router's get_many vs one index's.
  dask  [--records N] [--partitions P] [--runs R] [--blocksize B]
        tern.dask.build_index of a TSV (the C record path) on a 2-worker
        LocalCluster (processes) vs a single-process `tern import` of the
        same file ($TERN_BIN, default build/tern), alternating, with the
        peak RSS of the import and of each worker, and the load.

Run with Debian's interpreter and the built package:
  PYTHONPATH=build/python /usr/bin/python3 python/bench/bench_python.py gets
Figures are medians of R alternating runs (the machine may be shared);
the gets are timed in process CPU time, the builds in wall time.
"""
import argparse
import bisect
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import tern
import tern.shards


def keyset(n, seed=1):
    rng = random.Random(seed)
    keys = [b"user%012d" % k for k in rng.sample(range(10**12), n)]
    return keys, rng


def build_tern(path, keys, val):
    with tern.open(path, create=True) as idx:
        with idx.write(bulk=True) as txn:
            for k in keys:
                txn.put(k, val(k))


def build_lmdb(path, keys, val):
    import lmdb
    env = lmdb.open(path, map_size=1 << 34, writemap=False, sync=False)
    with env.begin(write=True) as txn:
        for k in sorted(keys):
            txn.put(k, val(k), append=True)
    env.sync()
    return env


# CPU time of the process: on a shared, loaded machine the wall clock
# counts other programs' turns (reads here are warm and single-threaded).
def per_key(fn, keys):
    t = time.process_time()
    for k in keys:
        fn(k)
    return time.process_time() - t


def timed(fn, *a):
    t = time.process_time()
    fn(*a)
    return time.process_time() - t


def bench_gets(args):
    keys, rng = keyset(args.keys)
    val = lambda k: b"value-" + k[-8:] + b"-" * 20  # noqa: E731  (34 bytes, inline)
    tmp = tempfile.mkdtemp(prefix="tern-pybench.", dir=args.dir)
    try:
        t = time.perf_counter()
        build_tern(os.path.join(tmp, "tern"), keys, val)
        env = build_lmdb(os.path.join(tmp, "lmdb"), keys, val)
        # Three shards of the same keys (the router's boundaries from the keys).
        skeys = sorted(keys)
        bounds = [skeys[len(skeys) // 3], skeys[2 * len(skeys) // 3]]
        dirs = [os.path.join(tmp, f"shard{i}") for i in range(3)]
        for i, d in enumerate(dirs):
            part = [k for k in keys if bisect.bisect_right(bounds, k) == i]
            build_tern(d, part, val)
        tern.shards.write_map(os.path.join(tmp, "map.json"), bounds, dirs)
        print(f"built {len(keys)} keys in tern, LMDB and 3 shards: "
              f"{time.perf_counter() - t:.1f} s", flush=True)
        probe = keys[:]
        rng.shuffle(probe)
        probe = probe[:args.lookups]
        absent = [b"user%012dx" % rng.randrange(10**12) for _ in range(args.lookups)]
        idx = tern.open(os.path.join(tmp, "tern"), readonly=True)
        router = tern.shards.open(os.path.join(tmp, "map.json"))
        snap = idx.snapshot()
        rtx = env.begin(buffers=False)
        # warm every page of both
        snap.get_many(keys)
        for k in keys:
            rtx.get(k)
        router.get_many(keys)
        B = args.batch

        def batches(fn, ks):
            for i in range(0, len(ks), B):
                fn(ks[i:i + B])

        cases = {
            "lmdb txn.get (present)": lambda: per_key(rtx.get, probe),
            "tern snap.get (present)": lambda: per_key(snap.get, probe),
            "tern idx.get (present)": lambda: per_key(idx.get, probe),
            "lmdb txn.get (absent)": lambda: per_key(rtx.get, absent),
            "tern snap.get (absent)": lambda: per_key(snap.get, absent),
            f"tern snap.get_many, batches of {B}": lambda: timed(batches, snap.get_many, probe),
            f"tern idx.get_many, batches of {B}": lambda: timed(batches, idx.get_many, probe),
            f"router get_many (3 shards), batches of {B}":
                lambda: timed(batches, router.get_many, probe),
        }
        res = {name: [] for name in cases}
        for r in range(args.runs):
            order = list(cases)
            if r % 2:
                order.reverse()
            for name in order:
                res[name].append(cases[name]())
        n = len(probe)
        print(f"\n{n} lookups, {args.runs} alternating runs; ns per key, median (min-max)")
        med = {}
        for name, ts in res.items():
            ns = [t / n * 1e9 for t in ts]
            med[name] = statistics.median(ns)
            print(f"  {name:45s} {med[name]:8.0f}  ({min(ns):.0f}-{max(ns):.0f})")
        L = med["lmdb txn.get (present)"]
        print("\nratios (lmdb per-key txn.get time / tern time; > 1: tern faster)")
        print(f"  snap.get present        {L / med['tern snap.get (present)']:.2f}x")
        print(f"  idx.get present         {L / med['tern idx.get (present)']:.2f}x")
        print(f"  snap.get absent         "
              f"{med['lmdb txn.get (absent)'] / med['tern snap.get (absent)']:.2f}x")
        print(f"  snap.get_many           {L / med[f'tern snap.get_many, batches of {B}']:.2f}x")
        print(f"  idx.get_many            {L / med[f'tern idx.get_many, batches of {B}']:.2f}x")
        print(f"  router get_many / one index's get_many: "
              f"{med[f'router get_many (3 shards), batches of {B}'] / med[f'tern idx.get_many, batches of {B}']:.2f}x the time")
        rtx.abort()
        snap.close()
        router.close()
        idx.close()
        env.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_tsv(path, n, seed=2):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        ks = rng.sample(range(10**12), n)
        for i, k in enumerate(ks):
            f.write(b"user%012d\tvalue-%d%s\n" % (k, i, b"\tcolor:red" if i % 16 == 0 else b""))


def vm_hwm(pid="self"):
    """Peak resident memory (VmHWM) of a process in MiB: of its own address
    space, unlike ru_maxrss, which counts what a fork copied in."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_import(tern_bin, out, tsv):
    """`tern import` of the TSV: (wall seconds, peak RSS in MiB (polled), CPU
    seconds (user + system))."""
    t = time.perf_counter()
    p = subprocess.Popen([tern_bin, "import", "-q", out, tsv])
    peak = 0.0
    while True:
        try:
            peak = max(peak, vm_hwm(p.pid))
        except (OSError, ValueError):
            pass
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.02)
    t = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"tern import failed ({status})")
    p.returncode = 0
    return t, peak, ru.ru_utime + ru.ru_stime


def cpu_seconds():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def log_phases():
    import logging
    h = logging.StreamHandler()
    h.setFormatter(logging.Formatter("    %(name)s: %(message)s"))
    lg = logging.getLogger("tern.dask")
    lg.addHandler(h)
    lg.setLevel(logging.INFO)


def bench_dask(args):
    """tern.dask.build_index of a TSV (the C record path) on a LocalCluster of
    2 worker processes vs `tern import` of the same file, alternating; a
    fresh cluster for each build, so that the workers' peak RSS is that
    build's."""
    import tern.dask
    from distributed import Client, LocalCluster
    log_phases()
    tmp = tempfile.mkdtemp(prefix="tern-pybench-dask.", dir=args.dir)
    tern_bin = os.environ.get("TERN_BIN", "build/tern")
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
          f"{os.getloadavg()[2]:.1f} (1, 5, 15 min) on {os.cpu_count()} cores", flush=True)
    try:
        tsv = args.tsv or os.path.join(tmp, "in.tsv")
        if not args.tsv:
            write_tsv(tsv, args.records)
        print(f"{args.records} records, {os.path.getsize(tsv) / 2**20:.0f} MiB of TSV; "
              f"C record path: {tern.HAVE_TSV}; {args.partitions} partitions, blocks of "
              f"{args.blocksize}", flush=True)
        imp, dsk = "tern import (1 process)", "tern.dask.build_index (2 workers)"
        times = {imp: [], dsk: []}
        rss = {imp: [], dsk: []}
        cpu = {imp: [], dsk: []}
        for r in range(args.runs):
            for name in ([imp, dsk] if r % 2 == 0 else [dsk, imp]):
                out = os.path.join(tmp, f"out{r}-{name[:4]}")
                if name == imp:
                    t, peak, c = run_import(tern_bin, out, tsv)
                    rss[name].append(round(peak))
                    cpu[name].append(c)
                else:
                    # A fresh cluster (started outside the timing): the workers'
                    # peak RSS is this build's.
                    cl = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40)
                    client = Client(cl)
                    client.run(log_phases)
                    w0, c0 = client.run(cpu_seconds), time.process_time()
                    t = time.perf_counter()
                    tern.dask.build_index(tsv, out, partitions=args.partitions, client=client,
                                          blocksize=args.blocksize, progress=False)
                    t = time.perf_counter() - t
                    w1, c1 = client.run(cpu_seconds), time.process_time()
                    cpu[name].append(sum(w1[k] - w0[k] for k in w0) + (c1 - c0))
                    peaks = client.run(vm_hwm)
                    rss[name].append([round(v) for v in peaks.values()])
                    client.close()
                    cl.close()
                times[name].append(t)
                print(f"  run {r}: {name}: {t:.2f} s, CPU {cpu[name][-1]:.2f} s, "
                      f"peak RSS (MiB) {rss[name][-1]}", flush=True)
                shutil.rmtree(out, ignore_errors=True)
        m = {k: statistics.median(v) for k, v in times.items()}
        for k, v in m.items():
            print(f"{k:40s} median {v:.2f} s  (runs {', '.join(f'{x:.2f}' for x in times[k])})")
        print(f"CPU seconds (user + system; the Dask build's: both workers and the client), "
              f"median: tern import {statistics.median(cpu[imp]):.2f}, Dask build "
              f"{statistics.median(cpu[dsk]):.2f}")
        print(f"peak RSS (MiB): tern import {max(rss[imp])}, each worker at most "
              f"{max(max(x) for x in rss[dsk])}")
        print(f"speed-up of the Dask build: {m[imp] / m[dsk]:.2f}x")
        print(f"load at the end: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
              f"{os.getloadavg()[2]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gets")
    g.add_argument("--keys", type=int, default=1_000_000)
    g.add_argument("--lookups", type=int, default=200_000)
    g.add_argument("--batch", type=int, default=1000)
    g.add_argument("--runs", type=int, default=5)
    g.add_argument("--dir", default=None)
    d = sub.add_parser("dask")
    d.add_argument("--records", type=int, default=1_000_000)
    d.add_argument("--partitions", type=int, default=8)
    d.add_argument("--blocksize", default="32MiB")
    d.add_argument("--tsv", default=None, help="an existing TSV of --records lines "
                   "(default: written afresh, user%%012d<TAB>value-%%d, a term on every 16th)")
    d.add_argument("--runs", type=int, default=3)
    d.add_argument("--dir", default=None)
    args = ap.parse_args()
    (bench_gets if args.cmd == "gets" else bench_dask)(args)


if __name__ == "__main__":
    sys.exit(main())

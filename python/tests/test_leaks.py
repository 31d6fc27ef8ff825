# SPDX-License-Identifier: MIT
"""Reference counts and memory: a workload repeated many times keeps the
Python heap (tracemalloc) and the process (RSS) flat, and objects the
binding returns or takes are not kept alive."""
import gc
import os
import sys
import tracemalloc

import pytest

import tern


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def workload(idx, r):
    with idx.write() as txn:
        for i in range(50):
            txn.put(b"k%d" % (i + r % 7), b"v" * (i * 40), terms=[("f", b"t%d" % (i % 3))])
        txn.delete(b"k3")
        txn.delete(b"absent")
    keys = [b"k%d" % i for i in range(60)]
    idx.get(b"k5")
    idx.get(b"absent")
    idx.get_many(keys)
    try:
        idx[b"absent"]
    except KeyError:
        pass
    with idx.snapshot() as s:
        list(s.scan())
        list(s.scan(reverse=True, limit=5, values=False))
        it = s.scan(prefix=b"k1")
        next(it)
        it.close()
        list(s.terms("f"))
        s.search(("f", "t1"), values=True)
        s.count(("f", "t2"))
        s.get_many(keys)
    try:
        idx.get(b"")
    except tern.InvalidError:
        pass
    try:
        with idx.write() as txn:
            txn.put(b"x", b"y")
            raise RuntimeError
    except RuntimeError:
        pass
    idx.stats()


@pytest.mark.skipif(os.environ.get("TERN_PY_SANITIZED") == "1",
                    reason="memory figures mean nothing under ASan's allocator")
def test_repeated_workload_is_flat(idxdir):
    with tern.open(idxdir, create=True) as idx:
        # Warm up with tracing on: caches, free lists and tracemalloc's own
        # tables grow once, then stay (one block of ~1 MB appears within the
        # first 1500 rounds and never grows after).
        tracemalloc.start()
        for r in range(1500):
            workload(idx, r)
        gc.collect()
        base_py = tracemalloc.get_traced_memory()[0]
        base_rss = rss_kib()
        for r in range(1000):
            workload(idx, r)
        gc.collect()
        grown_py = tracemalloc.get_traced_memory()[0] - base_py
        tracemalloc.stop()
        grown_rss = rss_kib() - base_rss
        print(f"python heap grew {grown_py} B, RSS grew {grown_rss} KiB over 1000 rounds")
        assert grown_py < 64 * 1024
        assert grown_rss < 8 * 1024


def test_refcounts_of_arguments_and_results(idxdir):
    with tern.open(idxdir, create=True) as idx:
        key, val = b"key-object", b"value-object"
        terms = [("f", "t")]
        before = (sys.getrefcount(key), sys.getrefcount(val), sys.getrefcount(terms))
        for _ in range(100):
            with idx.write() as txn:
                txn.put(key, val, terms=terms)
            idx.get(key)
            idx.get_many([key, key])
            idx.get(b"nope", val)
        assert (sys.getrefcount(key), sys.getrefcount(val), sys.getrefcount(terms)) == before
        r = idx.get(key)
        assert sys.getrefcount(r) == 2  # r and getrefcount's argument
        s = idx.snapshot()
        n = sys.getrefcount(idx)
        it = s.scan()
        assert sys.getrefcount(s) == 3  # s, the iterator, the argument
        del it
        assert sys.getrefcount(s) == 2
        s.close()
        del s
        assert sys.getrefcount(idx) == n - 1

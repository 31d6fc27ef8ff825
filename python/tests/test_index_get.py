# SPDX-License-Identifier: MIT
"""Index.get, idx[key], `in` and get_many read through a cached snapshot
that is re-opened only when the index changed (tern_snapshot_current):
each must still see the last commit, made by this handle, another handle
or another process, against a dict reference with a printed seed; and
get's argument handling."""
import multiprocessing as mp

import pytest

import tern


def _commit_in_child(path, items):
    with tern.open(path, foreground=True, busy_timeout_ms=10000) as idx:
        with idx.write() as txn:
            for k, v in items:
                if v is None:
                    txn.delete(k)
                else:
                    txn.put(k, v)


def test_reads_see_every_commit(idxdir, rng):
    ref = {}
    ctx = mp.get_context("fork")
    with tern.open(idxdir, create=True, write_buffer_bytes=4096, foreground=True,
                   busy_timeout_ms=10000) as idx:
        keys = [b"k%03d" % i for i in range(60)]
        for rnd in range(120):
            items = []
            for _ in range(rng.randrange(0, 4)):
                k = rng.choice(keys)
                v = None if k in ref and rng.random() < 0.3 else b"v%d-%d" % (rnd, rng.randrange(1000))
                items.append((k, v))
            how = rng.randrange(5)
            if how == 0:  # another process
                p = ctx.Process(target=_commit_in_child, args=(idxdir, items))
                p.start()
                p.join()
                assert p.exitcode == 0
            elif how == 1:
                idx.flush()
            else:
                with idx.write(bulk=rng.random() < 0.2) as txn:
                    for k, v in items:
                        txn.delete(k) if v is None else txn.put(k, v)
            if how != 1:
                for k, v in items:
                    if v is None:
                        ref.pop(k, None)
                    else:
                        ref[k] = v
            probe = rng.sample(keys, 10)
            for k in probe:
                assert idx.get(k) == ref.get(k)
                assert (k in idx) == (k in ref)
                if k in ref:
                    assert idx[k] == ref[k]
                else:
                    with pytest.raises(KeyError):
                        idx[k]
            assert idx.get_many(probe) == [ref.get(k) for k in probe]
        idx.compact()  # drops the cached snapshot: the catalog may shrink
        assert idx.get_many(keys) == [ref.get(k) for k in keys]


def test_second_handle_commit(idxdir):
    with tern.open(idxdir, create=True) as a:
        assert a.get(b"x") is None
        with tern.open(idxdir) as b:
            with b.write() as txn:
                txn.put(b"x", b"1")
            assert a.get(b"x") == b"1"
            with b.write() as txn:
                txn.delete(b"x")
        assert a.get(b"x") is None


def test_get_arguments(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with idx.write() as txn:
            txn.put(b"k", b"v")
        assert idx.get(b"k") == b"v"
        assert idx.get(key=b"k") == b"v"
        assert idx.get("k") == b"v"
        assert idx.get(memoryview(b"k")) == b"v"
        assert idx.get(b"no", b"d") == b"d"
        assert idx.get(b"no", default=7) == 7
        assert idx.get(key=b"no", default=None) is None
        for bad_args, bad_kw in [((), {}), ((b"a", b"b", b"c"), {}), ((b"a",), {"key": b"b"}),
                                 ((b"a", 1), {"default": 2}), ((b"a",), {"foo": 1}),
                                 ((), {"default": 1})]:
            with pytest.raises(TypeError):
                idx.get(*bad_args, **bad_kw)
        with pytest.raises(TypeError):
            idx.get(12)
        with pytest.raises(tern.InvalidError):
            idx.get(b"")
    with pytest.raises(tern.ClosedError):
        idx.get(b"k")
    with pytest.raises(tern.ClosedError):
        idx.get_many([b"k"])


def test_threads_read_while_one_commits(idxdir):
    """Readers in threads share the cached snapshot while a writer commits:
    each sees the rounds in order (never an older one after a newer), the
    writer sees its own commit at once, and nothing is left open."""
    import threading
    rounds = 200
    failures = []
    with tern.open(idxdir, create=True, write_buffer_bytes=1 << 14) as idx:
        done = threading.Event()

        def writer():
            try:
                for r in range(1, rounds + 1):
                    with idx.write() as txn:
                        txn.put(b"latest", b"%d" % r)
                        txn.put(b"r%04d" % r, b"x")
                    assert idx.get(b"latest") == b"%d" % r  # its own commit, at once
            except Exception as e:  # noqa: BLE001
                failures.append(e)
            finally:
                done.set()

        def reader():
            last = 0
            try:
                while not done.is_set():
                    v = idx.get(b"latest")
                    seen = int(v) if v else 0
                    assert seen >= last, (seen, last)
                    last = seen
                    if seen:
                        assert b"r%04d" % seen in idx
                        assert idx.get_many([b"r%04d" % seen, b"latest"])[0] == b"x"
            except Exception as e:  # noqa: BLE001
                failures.append(e)

        ts = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert failures == []
        assert idx.get(b"latest") == b"%d" % rounds
    assert idx.closed

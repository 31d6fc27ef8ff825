# SPDX-License-Identifier: MIT
"""Threads reading while one writes: every snapshot a reader takes holds
exactly a prefix of the writer's commits (never half a commit), and reads
run in parallel (the GIL is released around them)."""
import threading

import tern

BATCH = 200


def test_readers_while_one_writes(idxdir, rng):
    rounds = 25
    with tern.open(idxdir, create=True, write_buffer_bytes=1 << 15) as idx:
        done = threading.Event()
        failures = []

        def writer():
            try:
                for r in range(rounds):
                    with idx.write(bulk=(r % 4 == 3)) as txn:
                        for i in range(BATCH):
                            txn.put(b"r%03d-%04d" % (r, i), b"%d" % r,
                                    terms=[("round", b"%d" % r)])
            except Exception as e:  # noqa: BLE001
                failures.append(e)
            finally:
                done.set()

        def reader(seed):
            import random
            lr = random.Random(seed)
            try:
                while not done.is_set():
                    with idx.snapshot() as s:
                        n = s.count()
                        assert n % BATCH == 0, n
                        committed = n // BATCH
                        keys = [b"r%03d-%04d" % (lr.randrange(rounds), lr.randrange(BATCH))
                                for _ in range(64)]
                        vals = s.get_many(keys)
                        for k, v in zip(keys, vals):
                            r = int(k[1:4])
                            assert (v is not None) == (r < committed), (k, v, committed)
                        if committed:
                            r = lr.randrange(committed)
                            assert len(s.search(("round", b"%d" % r))) == BATCH
                            got = list(s.scan(prefix=b"r%03d-" % r, values=False))
                            assert len(got) == BATCH
                    v = idx.get(b"r000-0000")
                    assert v in (None, b"0")
            except Exception as e:  # noqa: BLE001
                failures.append(e)

        ts = [threading.Thread(target=reader, args=(rng.random(),)) for _ in range(4)]
        w = threading.Thread(target=writer)
        for t in ts:
            t.start()
        w.start()
        w.join()
        for t in ts:
            t.join()
        assert failures == []
        assert idx.snapshot().count() == rounds * BATCH


def test_close_refused_while_other_threads_read(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with idx.write(bulk=True) as txn:
            for i in range(5000):
                txn.put(b"k%06d" % i, b"v")
        stop = threading.Event()
        seen_busy = []

        def reader():
            keys = [b"k%06d" % i for i in range(0, 5000, 7)]
            while not stop.is_set():
                idx.get_many(keys)

        ts = [threading.Thread(target=reader) for _ in range(2)]
        for t in ts:
            t.start()
        for _ in range(200):
            try:
                idx.close()
                break  # closed between two calls: the readers must see ClosedError
            except tern.BusyError:
                seen_busy.append(1)
        stop.set()
        for t in ts:
            t.join()

# SPDX-License-Identifier: MIT
"""tern's Python API against a dict reference: every call, plain and bulk
transactions, snapshots across commits, scans with every bound, terms and
searches (random inputs, printed seed)."""
import bisect
import itertools

import pytest

import tern


def rkey(rng, alphabet=b"abcd", maxlen=6):
    return bytes(rng.choice(alphabet) for _ in range(rng.randint(1, maxlen)))


def rterms(rng):
    fields = ["color", "size", "tag"]
    return [(rng.choice(fields), rng.choice(["red", "blue", "x", "y", "z"]))
            for _ in range(rng.randint(0, 3))]


class Model:
    """The reference: key -> (value, set of (field bytes, term bytes))."""

    def __init__(self):
        self.docs = {}

    def put(self, k, v, terms):
        self.docs[k] = (v, {(f.encode(), t.encode()) for f, t in terms})

    def keys(self):
        return sorted(self.docs)

    def scan(self, prefix=None, start=None, stop=None, reverse=False, limit=None):
        ks = [k for k in self.keys()
              if (prefix is None or k.startswith(prefix))
              and (start is None or k >= start) and (stop is None or k < stop)]
        if reverse:
            ks.reverse()
        if limit is not None:
            ks = ks[:limit]
        return [(k, self.docs[k][0]) for k in ks]

    def search(self, *terms):
        want = {(f.encode(), t.encode()) for f, t in terms}
        return [k for k in self.keys() if want <= self.docs[k][1]]

    def terms(self, field):
        df = {}
        for _, ts in self.docs.values():
            for f, t in ts:
                if f == field.encode():
                    df[t] = df.get(t, 0) + 1
        return sorted(df.items())


def check_snapshot(s, m, rng):
    assert s.count() == len(m.docs) == len(s)
    assert list(s.scan()) == m.scan()
    probe = [rkey(rng) for _ in range(50)] + list(m.docs)[:50]
    assert s.get_many(probe) == [m.docs.get(k, (None,))[0] for k in probe]
    for k in probe[:20]:
        assert s.get(k) == m.docs.get(k, (None,))[0]
        assert (k in s) == (k in m.docs)
    for field in ["color", "size", "tag", "none"]:
        assert list(s.terms(field)) == m.terms(field)
    for terms in [[("color", "red")], [("color", "red"), ("size", "x")], [("tag", "z")]]:
        assert s.search(*terms) == m.search(*terms)
        assert s.count(*terms) == len(m.search(*terms))


@pytest.mark.parametrize("bulk", [False, True])
def test_model(idxdir, rng, bulk):
    m = Model()
    held = []  # (snapshot, frozen copy of the model)
    with tern.open(idxdir, create=True, write_buffer_bytes=1 << 14) as idx:
        for rnd in range(12):
            with idx.write(bulk=bulk) as txn:
                assert txn.bulk == bulk
                for _ in range(rng.randint(1, 300)):
                    k = rkey(rng)
                    if rng.random() < 0.25:
                        assert txn.delete(k) == (k in m.docs)
                        m.docs.pop(k, None)
                    else:
                        v = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 3, 200, 3000])))
                        ts = rterms(rng)
                        txn.put(k, v, terms=ts)
                        m.put(k, v, ts)
            for k in list(m.docs)[:30]:
                assert idx.get(k) == m.docs[k][0]
                assert idx[k] == m.docs[k][0]
            assert idx.get(b"\xff" * 9) is None
            assert idx.get(b"\xff" * 9, b"dflt") == b"dflt"
            probe = [rkey(rng) for _ in range(40)]
            assert idx.get_many(probe) == [m.docs.get(k, (None,))[0] for k in probe]
            if rnd % 3 == 0:
                snap = idx.snapshot()
                frozen = Model()
                frozen.docs = dict(m.docs)
                held.append((snap, frozen))
        # Each snapshot still sees its own commit, through later ones.
        for snap, frozen in held:
            check_snapshot(snap, frozen, rng)
            snap.close()
        with idx.snapshot() as s:
            check_snapshot(s, m, rng)
        idx.flush()
        idx.compact()
        idx.verify()
        with idx.snapshot() as s:
            check_snapshot(s, m, rng)
        st = idx.stats()
        assert st["docs"] == len(m.docs)
        assert isinstance(st["segments"], list)
        assert st["filter_bytes"] == 0  # compacted: one segment, no combined filter
    with tern.open(idxdir, readonly=True) as idx:
        assert idx.readonly
        with idx.snapshot() as s:
            check_snapshot(s, m, rng)


def test_scan_every_bound(idxdir, rng):
    m = Model()
    with tern.open(idxdir, create=True) as idx:
        with idx.write() as txn:
            for _ in range(400):
                k, v = rkey(rng), rkey(rng)
                txn.put(k, v)
                m.put(k, v, [])
        with idx.write(bulk=True) as txn:  # a segment under the buffer
            for _ in range(400):
                k, v = rkey(rng), rkey(rng)
                txn.put(k, v)
                m.put(k, v, [])
        bounds = [None, b"", b"a", b"b", b"bc", b"cd", b"d", b"e", rkey(rng), rkey(rng)]
        with idx.snapshot() as s:
            for prefix, start, stop in itertools.product(
                    [None, b"a", b"bc", b"z"], bounds, bounds):
                for reverse in (False, True):
                    for limit in (None, 0, 1, 7):
                        want = m.scan(prefix, start or None, stop or None, reverse, limit)
                        got = list(s.scan(prefix=prefix, start=start or None, stop=stop or None,
                                          reverse=reverse, limit=limit))
                        assert got == want, (prefix, start, stop, reverse, limit)
            assert list(s.scan(values=False, limit=5)) == [k for k, _ in m.scan(limit=5)]
            assert list(s.scan(start="b", stop="c", values=False)) == \
                [k for k, _ in m.scan(start=b"b", stop=b"c")]


def test_terms_prefix_start(idxdir, rng):
    with tern.open(idxdir, create=True) as idx:
        terms = sorted({rkey(rng, b"xyz", 4) for _ in range(200)})
        with idx.write() as txn:
            for i, t in enumerate(terms):
                txn.put(b"k%d" % i, b"", terms=[("f", t), (b"g", b"1")])
        with idx.snapshot() as s:
            assert [t for t, _ in s.terms("f")] == terms
            assert all(df == 1 for _, df in s.terms("f"))
            for p in [b"x", b"yz", b"zzzz", b"q"]:
                assert [t for t, _ in s.terms("f", prefix=p)] == \
                    [t for t in terms if t.startswith(p)]
            for st in [b"y", b"yy", b"a", b"zzzzz"]:
                assert [t for t, _ in s.terms("f", start=st)] == \
                    terms[bisect.bisect_left(terms, st):]
            assert list(s.terms("g")) == [(b"1", len(terms))]
            assert s.search(("g", "1"), limit=3) == sorted(b"k%d" % i for i in range(len(terms)))[:3]
            assert s.search(("g", "1"), ("f", terms[0]), values=True) == [(b"k0", b"")]
            assert s.search(("f", "nope")) == []


def test_keys_as_str_and_buffers(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with idx.write() as txn:
            txn.put("é", "ü")
            txn.put(bytearray(b"ba"), memoryview(b"mv"))
            txn.put(b"\x00nul\x00", b"\x00")
        assert idx["é"] == "ü".encode()
        assert idx.get("é".encode()) == "ü".encode()
        assert idx[b"ba"] == b"mv"
        assert idx[b"\x00nul\x00"] == b"\x00"
        with pytest.raises(TypeError):
            idx.get(12)
        with pytest.raises(TypeError):
            with idx.write() as txn:
                txn.put(b"k", 5)


def test_txn_abort_on_exception(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with pytest.raises(RuntimeError):
            with idx.write() as txn:
                txn.put(b"a", b"1")
                raise RuntimeError("boom")
        assert idx.get(b"a") is None
        txn = idx.write()
        txn.put(b"a", b"1")
        txn.abort()
        txn.abort()  # a no-op
        assert idx.get(b"a") is None
        with idx.write() as txn:
            txn.put(b"a", b"1")
            txn.commit()  # ended inside the block: __exit__ does nothing more
        assert idx[b"a"] == b"1"


def test_backup_and_options(idxdir, tmp_path):
    with tern.open(idxdir, create=True, pulsing_threshold=2, inline_value_max=64,
                   bloom_bits_per_key=8, fields={"color": 5}) as idx:
        o = idx.options()
        assert (o["pulsing_threshold"], o["inline_value_max"], o["bloom_bits_per_key"]) == \
            (2, 64, 8)
        assert o["fields"] == {"color": 5}
        with idx.write() as txn:
            txn.put(b"a", b"1", terms=[("color", "red")])
        idx.backup(str(tmp_path / "b1"))
        with idx.snapshot() as s:
            with idx.write() as txn:
                txn.put(b"b", b"2")
            s.backup(tmp_path / "b2")  # a path-like; the snapshot's commit only
    with tern.open(str(tmp_path / "b1")) as b:
        assert list(b.snapshot().scan()) == [(b"a", b"1")]
    with tern.open(str(tmp_path / "b2")) as b:
        with b.snapshot() as s:
            assert list(s.scan()) == [(b"a", b"1")]
            assert s.search(("color", "red")) == [b"a"]


def test_help_reads_as_a_manual():
    import pydoc
    text = pydoc.render_doc(tern, renderer=pydoc.plaintext)
    for name in ["Index", "Snapshot", "Txn", "scan", "get_many", "search", "BusyError",
                 "CorruptError", "Quick start"]:
        assert name in text
    for cls in [tern.Index, tern.Snapshot, tern.Txn, tern.ScanIterator, tern.TermsIterator]:
        assert cls.__doc__
        for name, attr in vars(cls).items():
            if not name.startswith("_") and callable(attr):
                assert attr.__doc__, f"{cls.__name__}.{name} has no docstring"


@pytest.mark.parametrize("bulk", [False, True])
def test_txn_reads_its_writes_and_ranges(idxdir, rng, bulk):
    """Txn.get sees the transaction's own puts, deletes and deleted ranges,
    put(no_overwrite=True) refuses a key it sees, and commit() returns the
    sequence number a later snapshot reports."""
    m = {}
    with tern.open(idxdir, create=True, write_buffer_bytes=1 << 14,
                   busy_timeout_ms=50) as idx:
        with idx.write() as txn:
            for _ in range(400):
                k, v = rkey(rng), rkey(rng, b"xyz", 20)
                txn.put(k, v)
                m[k] = v
        seqs = []
        for rnd in range(6):
            before = dict(m)
            txn = idx.write(bulk=bulk)
            for _ in range(rng.randint(1, 200)):
                k = rkey(rng)
                op = rng.randrange(5)
                if op == 0:
                    v = rkey(rng, b"xyz", 20)
                    txn.put(k, v)
                    m[k] = v
                elif op == 1:
                    assert txn.delete(k) == (k in m)
                    m.pop(k, None)
                elif op == 2:
                    v = b"new"
                    if k in m:
                        with pytest.raises(tern.ExistsError):
                            txn.put(k, v, no_overwrite=True)
                    else:
                        txn.put(k, v, no_overwrite=True)
                        m[k] = v
                elif op == 3 and rng.randrange(10) == 0:
                    a, b = sorted((rkey(rng), rkey(rng)))
                    txn.delete_range(a, b)
                    for key in [key for key in m if a <= key < b]:
                        del m[key]
                probe = rkey(rng)
                assert txn.get(probe) == m.get(probe)
            for k in list(m)[:100]:
                assert txn.get(k) == m[k]
            seqs.append(txn.commit())
            if m != before:  # a transaction that changed nothing keeps the number it began on
                assert len(seqs) == 1 or seqs[-1] > seqs[-2]
            with idx.snapshot() as s:
                assert s.seq >= seqs[-1]  # a background flush may have committed since
                assert list(s.scan()) == sorted(m.items())
        assert seqs == sorted(seqs)
        with idx.write() as txn:
            txn.delete_range()  # everything
            assert txn.get(next(iter(m))) is None
        with idx.snapshot() as s:
            assert s.count() == 0


def test_merge_factor(idxdir):
    """merge_factor: this handle's merges; 0 keeps every bulk commit's
    segment, the default 4 merges four of similar size into one."""
    def bulk_segments(idx, n, start):
        for s in range(start, start + n):
            with idx.write(bulk=True) as txn:
                for k in range(10):
                    txn.put(b"k%03d-%02d" % (s, k), b"v")
        return len(idx.stats()["segments"])

    with tern.open(idxdir, create=True, foreground=True, merge_factor=0) as idx:
        assert idx.options()["merge_factor"] == 0
        assert bulk_segments(idx, 5, 0) == 5
    with tern.open(idxdir, foreground=True) as idx:
        assert idx.options()["merge_factor"] == 4
        assert bulk_segments(idx, 1, 5) == 1  # six small ones: one bucket, merged
        assert idx.stats()["docs"] == 60
    with pytest.raises(tern.InvalidError):
        tern.open(idxdir, merge_factor=1)

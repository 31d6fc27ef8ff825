# SPDX-License-Identifier: MIT
"""tern.Builder, verify_segment, split_keys and export (when the library
has them), against sorted references with a printed seed."""
import os

import pytest

import tern

pytestmark = pytest.mark.skipif(not tern.HAVE_BUILDER, reason="libtern has no tern_builder_*")


def test_build_verify_and_errors(tmp_path, rng):
    keys = sorted({b"k%07d" % rng.randrange(10**7) for _ in range(3000)})
    path = str(tmp_path / "seg")
    with tern.Builder(path, inline_value_max=64) as b:
        assert b.path == path
        b.add(keys[0], b"first", terms=[("f", "t0")])
        n = b.add_many((k, b"v" * (i % 200)) for i, k in enumerate(keys[1:-1]))
        assert n == len(keys) - 2
        with pytest.raises(tern.InvalidError) as ei:
            b.add(keys[0], b"again")  # out of order: named, builder still usable
        assert "out of order" in str(ei.value)
        with pytest.raises(TypeError):
            b.add_many([(b"zz",)])
        b.add_many([(keys[-1], b"last", [("f", "t1")])])
    # Runs without terms and records with terms interleaved keep their order.
    mixed = str(tmp_path / "mixed")
    with tern.Builder(mixed) as b:
        assert b.add_many((k, b"v", [("f", "t")] if i % 3 == 0 else None)
                          for i, k in enumerate(keys)) == len(keys)
    assert tern.verify_segment(mixed)["documents"] == len(keys)
    assert b.closed
    with pytest.raises(tern.ClosedError):
        b.add(b"zzz", b"")
    info = tern.verify_segment(path)
    assert info["documents"] == len(keys)
    assert (info["first_key"], info["last_key"]) == (keys[0], keys[-1])
    assert info["bytes"] > 0 and info["name"].startswith("s")
    assert not os.path.exists(path + ".tmp")


def test_abort_leaves_nothing(tmp_path):
    path = str(tmp_path / "seg")
    with pytest.raises(RuntimeError):
        with tern.Builder(path) as b:
            b.add(b"a", b"1")
            raise RuntimeError
    assert not os.path.exists(path) and not os.path.exists(path + ".tmp")
    b = tern.Builder(path)
    b.add(b"a", b"1")
    del b  # dropped: aborted
    assert not os.path.exists(path + ".tmp")
    tern.Builder(path).abort()
    with pytest.raises(tern.Error):
        tern.Builder(str(tmp_path / "no" / "parent" / "seg"))


def test_verify_damaged_segment(tmp_path):
    path = str(tmp_path / "seg")
    with tern.Builder(path) as b:
        b.add_many((b"k%05d" % i, b"v") for i in range(5000))
    tim = [f for f in os.listdir(path) if f.endswith(".tim")][0]
    p = os.path.join(path, tim)
    data = bytearray(open(p, "rb").read())
    data[len(data) // 2] ^= 0x55
    open(p, "wb").write(data)
    with pytest.raises(tern.CorruptError) as ei:
        tern.verify_segment(path)
    assert ".tim" in str(ei.value)


def test_split_keys_and_export(idxdir, tmp_path, rng):
    ref = {}
    with tern.open(idxdir, create=True) as idx:
        with idx.write(bulk=True) as txn:
            for i in range(30000):
                k = b"%08d" % rng.randrange(10**8)
                ref[k] = b"v%d" % i
                txn.put(k, ref[k], terms=[("g", b"%d" % (i % 4))])
        keys = sorted(ref)
        bounds = idx.split_keys(4)
        assert len(bounds) == 3 and bounds == sorted(bounds)
        edges = [None] + bounds + [None]
        sizes = [sum(1 for k in keys if (lo is None or k >= lo) and (hi is None or k < hi))
                 for lo, hi in zip(edges, edges[1:])]
        assert all(abs(s - len(keys) / 4) < 0.1 * len(keys) / 4 + 200 for s in sizes), sizes
        assert idx.split_keys(1) == []
        with pytest.raises(tern.InvalidError):
            idx.split_keys(0)
        with idx.snapshot() as s:
            assert s.split_keys(4) == bounds
            seg = str(tmp_path / "exp")
            with tern.Builder(seg) as b:
                s.export(b, start=bounds[0], stop=bounds[2])
        want = [k for k in keys if bounds[0] <= k < bounds[2]]
        info = tern.verify_segment(seg)
        assert info["documents"] == len(want)
        assert (info["first_key"], info["last_key"]) == (want[0], want[-1])


@pytest.mark.skipif(not tern.HAVE_INGEST, reason="libtern has no tern_ingest")
def test_ingest(idxdir, tmp_path, rng):
    ref = {}
    segs = []
    for s in range(3):
        path = str(tmp_path / f"seg{s}")
        keys = {b"%d-%06d" % (s, rng.randrange(10**6)) for _ in range(2000)}
        if s == 0:
            keys.add(b"0-000000")  # also in the index: ingested behind, the index's wins
        keys = sorted(keys)
        with tern.Builder(path) as b:
            b.add_many((k, b"s%d" % s, [("seg", b"%d" % s)]) for k in keys)
        ref.update({k: b"s%d" % s for k in keys})
        segs.append(path)
    with tern.open(idxdir, create=True) as idx:
        with idx.write() as txn:
            txn.put(b"0-000000", b"old")
        idx.ingest(segs[:1], behind=True)
        idx.ingest(segs[1:])
        ref[b"0-000000"] = b"old"  # behind: the index's own document stays
        with idx.snapshot() as s:
            assert list(s.scan()) == sorted(ref.items())
            assert len(s.search(("seg", "1"))) == sum(1 for k in ref if k.startswith(b"1-"))

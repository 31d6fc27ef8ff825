# SPDX-License-Identifier: MIT
"""Statuses as exceptions: the class of every status, the real failures
that reach each reachable one, and misuse that must raise, never crash."""
import errno
import glob
import os
import struct
import threading

import pytest

import tern

STATUS_CLASS = {
    tern.NOTFOUND: tern.NotFoundError,
    tern.EINVAL: tern.InvalidError,
    tern.ECORRUPT: tern.CorruptError,
    tern.EVERSION: tern.VersionError,
    tern.EBUSY: tern.BusyError,
    tern.ENOMEM: tern.NoMemoryError,
    tern.ERANGE: tern.RangeError,
    tern.ENOTINDEX: tern.NotIndexError,
    tern.EFULL: tern.FullError,
    tern.EPARTIAL: tern.PartialError,
    tern.EEXIST: tern.ExistsError,
    tern.ESTOPPED: tern.StoppedError,
    -errno.EIO: tern.OSError,
    -errno.ENOSPC: tern.OSError,
}


@pytest.mark.parametrize("status,cls", sorted(STATUS_CLASS.items()))
def test_every_status_has_its_class(status, cls):
    with pytest.raises(cls) as ei:
        tern._tern._raise_status(status)
    assert isinstance(ei.value, tern.Error)
    assert ei.value.status == status
    if status == tern.NOTFOUND:
        assert isinstance(ei.value, KeyError)
    elif status == tern.ENOMEM:
        assert isinstance(ei.value, MemoryError)
    else:
        assert tern.strerror(status) in str(ei.value)
    if cls is tern.OSError:
        assert isinstance(ei.value, OSError) and ei.value.errno == -status
    if cls is tern.InvalidError:
        assert isinstance(ei.value, ValueError)


def test_invalid_arguments(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with idx.write() as txn:
            for bad in [b"", b"k" * (tern.KEY_MAX + 1)]:
                with pytest.raises(tern.InvalidError) as ei:
                    txn.put(bad, b"v")
                assert ei.value.status == tern.EINVAL and ei.value.errmsg
            with pytest.raises(tern.InvalidError):
                txn.put(b"k", b"v", terms=[("", "t")])
            with pytest.raises(tern.InvalidError):
                txn.put(b"k", b"v", terms=[("f\x00g", "t")])
            with pytest.raises(tern.InvalidError):
                txn.put(b"k", b"v", terms=[("f", "")])
            with pytest.raises(TypeError):
                txn.put(b"k", b"v", terms=["f:t"])
            txn.put(b"k", b"v")  # still usable
        assert idx[b"k"] == b"v"
        with pytest.raises(tern.InvalidError):
            idx.get(b"")
        with pytest.raises(tern.InvalidError):
            idx.get_many([b"a", b""])
        with idx.snapshot() as s:
            with pytest.raises(tern.InvalidError):
                s.search()
            with pytest.raises(tern.InvalidError):
                s.scan(limit=-1)
    with pytest.raises(tern.InvalidError):
        tern.open(idxdir, create=True, readonly=True)
    with tern.open(idxdir, readonly=True) as ro:
        with pytest.raises(tern.InvalidError):
            ro.write()


def test_not_index_and_oserror(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "file.txt").write_text("x")
    with pytest.raises(tern.NotIndexError) as ei:
        tern.open(str(other), create=True)
    assert "other" in str(ei.value)
    with pytest.raises(tern.NotIndexError):
        tern.open(str(tmp_path / "absent"))
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with pytest.raises(tern.Error) as ei:
        tern.open(str(blocker / "sub"), create=True)
    assert ei.value.status != 0
    with tern.open(str(tmp_path / "idx"), create=True) as idx:
        with pytest.raises(tern.OSError) as ei:
            idx.backup(str(tmp_path / "no" / "such" / "dir"))
        assert ei.value.errno == errno.ENOENT and ei.value.status == -errno.ENOENT


def test_busy(idxdir):
    with tern.open(idxdir, create=True) as idx:
        txn = idx.write()
        with pytest.raises(tern.BusyError) as ei:
            idx.write()
        assert ei.value.status == tern.EBUSY
        with pytest.raises(tern.BusyError):
            idx.flush()
        with pytest.raises(tern.BusyError):
            idx.close()  # a transaction is open
        txn.put(b"a", b"1")
        txn.commit()
        s = idx.snapshot()
        with pytest.raises(tern.BusyError):
            idx.close()  # a snapshot is open
        it = s.scan()
        next(it)
        with pytest.raises(tern.BusyError):
            s.close()  # an iterator is open
        it.close()
        te = s.terms("f")
        with pytest.raises(tern.BusyError):
            s.close()
        del te  # dropping closes it
        s.close()


def test_closed_handles(idxdir):
    idx = tern.open(idxdir, create=True)
    txn = idx.write()
    txn.put(b"a", b"1")
    txn.commit()
    for call in [lambda: txn.put(b"b", b"2"), lambda: txn.delete(b"a"), txn.commit,
                 lambda: txn.__enter__()]:
        with pytest.raises(tern.ClosedError) as ei:
            call()
        assert isinstance(ei.value, ValueError) and ei.value.status == tern.EINVAL
    s = idx.snapshot()
    it = s.scan()
    s2 = idx.snapshot()
    it.close()
    s.close()
    s.close()  # twice: a no-op
    for call in [lambda: s.get(b"a"), lambda: s.scan(), lambda: s.count(), lambda: len(s),
                 lambda: s.get_many([b"a"]), lambda: b"a" in s, lambda: s.search(("f", "t"))]:
        with pytest.raises(tern.ClosedError):
            call()
    with pytest.raises(StopIteration):
        next(it)  # closed iterator: exhausted
    s2.close()
    idx.close()
    idx.close()
    assert idx.closed
    for call in [lambda: idx.get(b"a"), lambda: idx[b"a"], idx.snapshot, idx.write,
                 idx.stats, idx.verify, lambda: idx.get_many([b"a"])]:
        with pytest.raises(tern.ClosedError):
            call()


def test_corrupt_and_version(idxdir):
    with tern.open(idxdir, create=True) as idx:
        with idx.write(bulk=True) as txn:
            for i in range(2000):
                txn.put(b"k%05d" % i, b"v%d" % i)
    tim = glob.glob(os.path.join(idxdir, "*.tim"))[0]
    data = bytearray(open(tim, "rb").read())
    data[5000] ^= 0xFF
    open(tim, "wb").write(data)
    with tern.open(idxdir) as idx:
        with pytest.raises(tern.CorruptError) as ei:
            idx.verify()
        assert ".tim" in str(ei.value) and ei.value.status == tern.ECORRUPT
    tix = glob.glob(os.path.join(idxdir, "*.tix"))[0]
    data = bytearray(open(tix, "rb").read())
    data[8:12] = struct.pack("<I", 99)
    open(tix, "wb").write(data)
    with tern.open(idxdir) as idx:
        with pytest.raises((tern.VersionError, tern.CorruptError)) as ei:
            idx.snapshot()
        assert ".tix" in str(ei.value)


def test_full(idxdir):
    """A catalog map of 1 MiB filled with 4 MB of buffered writes: FullError
    from a library whose map has a fixed size, or (when the map grows by
    itself) every commit kept."""
    with tern.open(idxdir, create=True, map_size=1 << 20, write_buffer_bytes=1 << 30) as idx:
        try:
            for r in range(40):
                with idx.write() as txn:
                    for i in range(100):
                        txn.put(b"k%d-%d" % (r, i), b"x" * 1000)
        except tern.FullError as e:
            assert e.status == tern.EFULL
        else:
            assert idx.get(b"k39-99") == b"x" * 1000


def test_concurrent_txn_use_raises(idxdir):
    """A transaction used by two threads: the second call raises BusyError
    or runs after the first, never concurrently."""
    with tern.open(idxdir, create=True) as idx:
        txn = idx.write()
        errors = []

        def worker(n):
            for i in range(2000):
                try:
                    txn.put(b"t%d-%d" % (n, i), b"v")
                    txn.delete(b"absent")
                except tern.BusyError:
                    pass
                except Exception as e:  # noqa: BLE001
                    errors.append(e)

        ts = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        txn.commit()
        assert errors == []

# SPDX-License-Identifier: MIT
"""tern — an embedded primary-key index with secondary terms, from Python.

tern stores documents: a primary key (1 to KEY_MAX bytes), a value (0 to
VALUE_MAX bytes) and secondary terms, (field, term) pairs that searches find
the document by.  Small mutable state lives in LMDB; large immutable
segments in tern's own checksummed format.  This package is a thin layer
over the C library (include/tern.h is the full manual: costs, lifetimes,
threads, processes).

Quick start::

    import tern
    with tern.open("/tmp/idx", create=True) as idx:
        with idx.write() as txn:                     # commits on exit
            txn.put(b"k1", b"v1", terms=[("color", "red")])
            txn.put("k2", "v2")                      # str is UTF-8
        idx.get(b"k1")                               # b"v1"; None when absent
        idx[b"nope"]                                 # NotFoundError (a KeyError)
        idx.get_many([b"k1", b"k2", b"k3"])          # [b"v1", b"v2", None]
        with idx.snapshot() as s:                    # one commit, frozen
            list(s.scan(prefix=b"k"))                # [(b"k1", b"v1"), (b"k2", b"v2")]
            s.search(("color", "red"))               # [b"k1"], in key order
            list(s.terms("color"))                   # [(b"red", 1)]
            s.count()                                # 2

Keys, values and terms are bytes (str is accepted and encoded as UTF-8;
any bytes-like object too); values come back as bytes.

Writing: one write transaction at a time per index, across threads and
processes; a second one raises BusyError at once (tern never waits).
``idx.write(bulk=True)`` holds the transaction in memory and writes it as a
segment at commit: use it to load many documents.

Errors: every failure raises a subclass of tern.Error carrying .status (a
TERN_E... code, also tern.EINVAL etc., or a negated errno) and .errmsg (the
library's detailed message, naming the file): InvalidError (also a
ValueError), CorruptError, VersionError, BusyError, NoMemoryError (a
MemoryError), RangeError, NotIndexError, FullError, PartialError (the commit
is durable, work after it failed), OSError (also the builtin OSError, with
.errno), ClosedError (a handle used after close, an InvalidError), and
NotFoundError (a KeyError, for idx[key]).

Threads: one Index and one Snapshot may be used by any number of threads;
every call that can do I/O, sort or wait releases the GIL, so threads read
in parallel.  Transactions and iterators are one thread's at a time (a
concurrent second call raises BusyError).  Misuse raises, never crashes:
closing an index with snapshots open, a snapshot with iterators open
(BusyError), using anything after close (ClosedError).

Processes: open a directory once per process and share the Index.  After
fork(), the child must open the index anew.

Bulk builds and serving at scale: tern.dask (a distributed build on
dask.distributed) and tern.shards (a read-only router over range shards),
when the library has the builder and ingest calls (HAVE_BUILDER,
HAVE_INGEST: the package binds the calls the tern.h it was built against
declares).
"""

from . import _tern
from ._tern import (  # noqa: F401  (re-exported)
    Index, Snapshot, Txn, ScanIterator, TermsIterator,
    Error, NotFoundError, InvalidError, CorruptError, VersionError, BusyError,
    NoMemoryError, RangeError, NotIndexError, FullError, PartialError, OSError,
    ClosedError, ExistsError, StoppedError,
    OK, NOTFOUND, EINVAL, ECORRUPT, EVERSION, EBUSY, ENOMEM, ERANGE, ENOTINDEX,
    EFULL, EPARTIAL, EEXIST, ESTOPPED, KEY_MAX, FIELD_MAX, VALUE_MAX,
    version, strerror,
)

__all__ = [
    "open", "Index", "Snapshot", "Txn", "ScanIterator", "TermsIterator",
    "Error", "NotFoundError", "InvalidError", "CorruptError", "VersionError",
    "BusyError", "NoMemoryError", "RangeError", "NotIndexError", "FullError",
    "PartialError", "OSError", "ClosedError", "ExistsError", "StoppedError",
    "version", "strerror",
]

HAVE_BUILDER = _tern.HAVE_BUILDER  # tern.Builder, Index.split_keys, Snapshot.export
HAVE_INGEST = _tern.HAVE_INGEST    # Index.ingest
HAVE_TSV = _tern.HAVE_TSV          # tern.dask's C record path for TSV sources
if HAVE_BUILDER:
    from ._tern import Builder, verify_segment  # noqa: F401
    __all__ += ["Builder", "verify_segment"]

__version__ = _tern.version()


def open(path, create=False, readonly=False, **options):  # noqa: A001 (tern.open)
    """Opens the tern index in directory `path` and returns an Index.

    create=True makes the index when `path` is absent or empty (NotIndexError
    otherwise when there is none); readonly=True opens for reading only.
    Other options, kept in the index when it is created (ignored on reopen,
    except a larger map_size): pulsing_threshold, inline_value_max,
    bloom_bits_per_key, write_buffer_bytes, map_size, fields (a dict of
    field name -> pulsing threshold); and for this handle only pread=True
    (TERN_PREAD), foreground=True (TERN_FOREGROUND), busy_timeout_ms
    (how long a writer waits for another before BusyError; 0: not at all)
    and merge_factor (segments of similar size merged into one; 4, 0:
    none until compact()).  include/tern.h,
    tern_options, documents each.

    Use it as a context manager (``with tern.open(p) as idx:``) or call
    close().
    """
    return Index(path, create=create, readonly=readonly, **options)

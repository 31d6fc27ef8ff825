# SPDX-License-Identifier: MIT
"""tern.dask — a distributed bulk build on dask.distributed.

``build_index(source, out, partitions=N)`` builds one tern index at `out`
(or, with ``shards=S``, S range shards and a shard map file, see
tern.shards) from records spread over a Dask cluster:

1. **Sample** the keys (every partition's, about `sample` in all) and choose
   N-1 range boundaries (quantiles of the sample).
2. **Shuffle** every record to its range partition across the workers
   (Dask's task shuffle on the range number).
3. **Build**: each task sorts its range, resolves duplicate keys, and
   writes one segment with tern.Builder into the staging folder (`staging`,
   by default OUT.staging: every worker and the client must reach it, e.g.
   a shared file system).  The builder writes PATH.tmp and renames it on
   finish, and a retried task starts its range over, so a killed worker's
   partial segment is discarded, never ingested.
4. **Install**: one Index.ingest of every segment into `out` (atomic, all or
   nothing), or with shards=S, S indexes (the ranges split into S
   contiguous groups, each shard ingesting its own segments, in parallel on
   the workers) plus the shard map at OUT (a file; shard directories
   OUT.shard-NNNNN).

Duplicate keys: with ``version="col"`` the record with the greatest value
in that column wins (a tie is an error); without it a duplicate key is an
error (DuplicateKeyError, naming the key).

When the library has no tern_ingest (tern.HAVE_INGEST false), steps 3 and
4 fall back: each range task writes its sorted records to a staging file
(temporary name, renamed when complete), and the install writes them, in
key order, one bulk transaction per range, into OUT.tmp (one task per
shard for shards=S), renamed to OUT at the end: the same result, but the
index-writing part runs in one process per index.

`source` is a Dask DataFrame with columns "key" and "value" (bytes or
str) and optionally "terms" (a list of (field, term) pairs per row) and the
version column; a Dask Bag of (key, value[, terms]) tuples; or a path (or
list of paths, globs allowed) of TSV files in `tern import`'s format
(key<TAB>value[<TAB>field:term]..., escaped as docs/cli.md says).

TSV sources take the C record path when the extension has it
(tern.HAVE_TSV): the files are cut into byte ranges of `blocksize` (a
range holds the lines that start in it); steps 1 and 2 run in C on each
range (_tern._tsv_sample: keys at random offsets; _tern._tsv_split: the
lines parsed by `tern import`'s own parser into one bytes blob of decoded
records per key range, no Python object per record), and step 3 too
(_tern._tsv_build: a range's records radix-sorted and written with the
builder).  A malformed line is tern.InvalidError "FILE:LINE: reason"; a
TSV source has no version column (version= is a ValueError).  At most
2,000 keys per range are sampled there.

Progress shows in Dask's dashboard, and as a progress bar on a terminal
(progress=None: when stderr is a terminal).  Per-worker memory is one
range partition (with its shuffle buffers): choose `partitions` so that
1/N of the data fits a worker comfortably.
"""

import logging
import os
import shutil
import sys
import time

log = logging.getLogger("tern.dask")  # each phase's time at INFO

from . import _tern
from .shards import write_map

__all__ = ["build_index", "DuplicateKeyError", "parse_tsv_line"]


class DuplicateKeyError(ValueError):
    """Two records have the same key and no version column decides (or
    their versions are equal).  .key is the key."""

    def __init__(self, key, detail=""):
        super().__init__(f"duplicate key {key!r}{detail}")
        self.key = key

    def __reduce__(self):  # crosses process boundaries (Dask pickles it)
        return (DuplicateKeyError, (self.key,))


# ---- TSV, as `tern import` reads it --------------------------------------

_ESC = {ord("\\"): b"\\", ord("t"): b"\t", ord("n"): b"\n", ord("r"): b"\r"}


def _unescape(s):
    if b"\\" not in s:
        return s
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("bad escape at the end of a column")
        e = s[i + 1]
        if e in _ESC:
            out += _ESC[e]
            i += 2
        elif e == ord("x") and i + 3 < n + 0 and i + 4 <= n:
            try:
                out.append(int(s[i + 2:i + 4], 16))
            except ValueError:
                raise ValueError(f"bad escape {s[i:i + 4]!r}") from None
            i += 4
        else:
            raise ValueError(f"bad escape {s[i:i + 2]!r}")
    return bytes(out)


def parse_tsv_line(line):
    """One line of `tern import`'s TSV (bytes, without or with its LF/CRLF)
    as (key, value, terms), or None for a blank line.  ValueError when
    malformed."""
    if line.endswith(b"\n"):
        line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
    if not line:
        return None
    cols = line.split(b"\t")
    if len(cols) < 2:
        raise ValueError("no TAB after the key")
    key = _unescape(cols[0])
    if not key:
        raise ValueError("empty key")
    terms = []
    for c in cols[2:]:
        f, sep, t = c.partition(b":")
        if not sep or not f or not t:
            raise ValueError("term without 'field:'")
        terms.append((_unescape(f), _unescape(t)))
    return key, _unescape(cols[1]), terms


# ---- the source as partitions of records ------------------------------------

def _b(x):
    return x.encode() if isinstance(x, str) else bytes(x)


def _norm_terms(ts):
    if ts is None:
        return None
    if not isinstance(ts, (list, tuple)):  # pandas may hand NaN for a missing list
        return None
    return [(_b(f), _b(t)) for f, t in ts] or None


def _records(part, kind, version):
    """The records of one input partition as (key, value, terms, version)
    tuples, keys and values as bytes."""
    if kind == "tsv":
        for line in part:
            r = parse_tsv_line(line.encode("latin-1"))
            if r is not None:
                yield r[0], r[1], r[2] or None, None
    elif kind == "bag":
        for r in part:
            if isinstance(r, dict):
                yield (_b(r["key"]), _b(r["value"]), _norm_terms(r.get("terms")),
                       r.get(version) if version else None)
            else:
                yield (_b(r[0]), _b(r[1]), _norm_terms(r[2] if len(r) > 2 else None),
                       r[3] if version and len(r) > 3 else None)
    else:  # a pandas partition
        n = len(part)
        keys, vals = part["key"].tolist(), part["value"].tolist()
        terms = part["terms"].tolist() if "terms" in part.columns else [None] * n
        vers = part[version].tolist() if version else [None] * n
        for k, v, t, ver in zip(keys, vals, terms, vers):
            yield _b(k), _b(v), _norm_terms(t), ver


def _partitions(source, version, blocksize):
    """(kind, list of delayed input partitions) of a source."""
    import dask.bag as db
    import dask.dataframe as dd

    if isinstance(source, (str, os.PathLike)) or (
            isinstance(source, (list, tuple)) and source and
            isinstance(source[0], (str, os.PathLike))):
        paths = [os.fspath(p) for p in (source if isinstance(source, (list, tuple)) else [source])]
        # latin-1 maps bytes 1:1 to code points: the lines go back to bytes.
        bag = db.read_text(paths, encoding="latin-1", blocksize=blocksize)
        return "tsv", bag.to_delayed()
    if isinstance(source, db.Bag):
        return "bag", source.to_delayed()
    if isinstance(source, dd.DataFrame):
        if version is not None and version not in source.columns:
            raise ValueError(f"version column {version!r} is not in the source")
        return "frame", source.to_delayed()
    raise TypeError("source must be a Dask DataFrame, a Dask Bag or TSV path(s)")


# ---- step 1: boundaries ----------------------------------------------------

def _sample_keys(part, kind, version, per_part, seed):
    """Up to per_part keys of one input partition, drawn uniformly (only the
    sampled records' keys are decoded), pickled: distributed serializes a
    list of many bytes objects item by item, far slower than one blob."""
    import pickle
    return pickle.dumps(_sample_list(part, kind, per_part, seed),
                        protocol=pickle.HIGHEST_PROTOCOL)


def _sample_list(part, kind, per_part, seed):
    import random
    if kind == "frame":
        items = part["key"].tolist()
    else:
        items = part if isinstance(part, list) else list(part)
    if len(items) > per_part:
        items = random.Random(seed + len(items)).sample(items, per_part)
    if kind == "frame":
        return [_b(k) for k in items]
    if kind == "bag":
        return [_b(r["key"] if isinstance(r, dict) else r[0]) for r in items]
    keys = []
    for line in items:  # TSV: the first column only
        k = line.encode("latin-1").split(b"\t", 1)[0].rstrip(b"\r\n")
        if k:
            keys.append(_unescape(k))
    return keys


def _boundaries(sample, n):
    sample = sorted(set(sample))
    if n <= 1 or not sample:
        return []
    out = []
    for i in range(1, n):
        k = sample[(i * len(sample)) // n]
        if not out or k > out[-1]:
            out.append(k)
    if out and out[0] == sample[0]:
        out = out[1:]  # a range would start at the smallest key: no empty first range
    return out


# ---- step 2: the shuffle ---------------------------------------------------

def _split(part, kind, version, bounds):
    """One input partition's records, split by range: a tuple of
    len(bounds)+1 pickled lists (Dask moves each to its range's task; one
    bytes object moves and sits in a worker's memory far cheaper than
    thousands of tuples, which its serializer and garbage collector walk)."""
    import bisect
    import pickle
    buckets = tuple([] for _ in range(len(bounds) + 1))
    br = bisect.bisect_right
    for r in _records(part, kind, version):
        buckets[br(bounds, r[0])].append(r)
    return tuple(pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL) for b in buckets)


# ---- step 3: one range -> one segment (or one sorted staging file) -------------

def _resolve(recs, versioned):
    """Sorts one range's records by key and resolves duplicates: the greatest
    version wins when versioned, else a duplicate is an error."""
    if versioned:
        recs.sort(key=lambda r: (r[0], r[3]))
    else:
        recs.sort(key=lambda r: r[0])
    out = []
    last = None
    for r in recs:
        if r[0] == last:
            if not versioned:
                raise DuplicateKeyError(r[0])
            if r[3] == out[-1][3]:
                raise DuplicateKeyError(r[0], f" (equal versions {r[3]!r})")
            out[-1] = r
        else:
            out.append(r)
            last = r[0]
    return out


def _part_path(staging, part):
    return os.path.join(staging, "part-%05d" % part)


def _write_range(part, buckets, staging, versioned, options, use_builder):
    """A range: its records from every input partition, sorted,
    deduplicated and written as one segment (or one staging file); returns
    (part, path, documents)."""
    import pickle
    recs = [r for b in buckets for r in pickle.loads(b)]
    recs = _resolve(recs, versioned)
    path = _part_path(staging, part)
    _discard(path)  # a retried task starts its range over
    if not recs:
        return part, path, 0
    if use_builder:
        b = _tern.Builder(path, **options)
        try:
            b.add_many((r[0], r[1], r[2]) if r[2] else (r[0], r[1]) for r in recs)
        except BaseException:
            b.abort()
            raise
        return part, path, b.finish()["documents"]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump([(r[0], r[1], r[2]) for r in recs], f, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return part, path, len(recs)


def _discard(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    if os.path.exists(path + ".tmp"):
        _discard(path + ".tmp")


# ---- the C record path for TSV sources ----------------------------------------

def _tsv_paths(source):
    """The TSV files of a source given as path(s) (globs expanded), or None
    when the source is not paths."""
    import glob
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    elif not (isinstance(source, (list, tuple)) and source and
              isinstance(source[0], (str, os.PathLike))):
        return None
    paths = []
    for p in source:
        p = os.fspath(p)
        hits = sorted(glob.glob(p)) if glob.has_magic(p) else [p]
        if not hits:
            raise FileNotFoundError(p)
        paths += hits
    return paths


def _tsv_blocks(paths, blocksize):
    """(path, start, end) byte ranges of about blocksize bytes covering every
    file; a range holds the lines that start in it (_tern._tsv_split)."""
    from dask.utils import parse_bytes
    bs = max(1, parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize))
    blocks = []
    for p in paths:
        size = os.path.getsize(p)
        blocks += [(p, s, min(size, s + bs)) for s in range(0, size, bs)]
    return blocks


def _blob_keys(blob):
    """The keys of a _tsv_sample blob (u32 little-endian length, bytes)."""
    keys, i, n = [], 0, len(blob)
    while i < n:
        k = int.from_bytes(blob[i:i + 4], "little")
        keys.append(bytes(blob[i + 4:i + 4 + k]))
        i += 4 + k
    return keys


def _tsv_write_range(part, blobs, staging, options):
    """A range from its blobs (one per TSV block): sorted and built in C as
    one segment; returns (part, path, documents)."""
    path = _part_path(staging, part)
    _discard(path)  # a retried task starts its range over
    t = time.monotonic()
    info = _tern._tsv_build(blobs, path, DuplicateKeyError, **options)
    if "seconds" in info:
        log.info("range %d: %d documents in %.2f s (sort %.2f, add %.2f, finish %.2f)", part,
                 info["documents"], time.monotonic() - t, *info["seconds"])
    return part, path, info["documents"]


def _ranges_tsv_c(client, paths, n, staging, build_opts, blocksize, sample, seed, progress):
    """Steps 1-3 on the C record path: byte ranges of the files sampled and
    split in C (bytes blobs, no per-record Python object), each key range
    sorted and built in C.  Returns (bounds, [(part, path, documents)])."""
    import dask
    blocks = _tsv_blocks(paths, blocksize)
    if not blocks:
        return [], []
    n = n or len(blocks)
    t0 = time.monotonic()
    # Quantiles of ~2,000 keys a range are within a few percent; more
    # costs a pread each.
    per = max(1, min(sample, 2000 * n) // len(blocks))
    sampled = client.compute([dask.delayed(_tern._tsv_sample)(p, s, e, per, seed + i)
                              for i, (p, s, e) in enumerate(blocks)])
    bounds = _boundaries([k for blob in client.gather(sampled) for k in _blob_keys(blob)], n)
    nranges = len(bounds) + 1
    log.info("sampled %d TSV blocks: %d ranges, %.2f s", len(blocks), nranges,
             time.monotonic() - t0)
    split = [dask.delayed(_tern._tsv_split, nout=nranges)(p, s, e, bounds)
             for p, s, e in blocks]
    tasks = [dask.delayed(_tsv_write_range)(r, [sp[r] for sp in split], staging, build_opts)
             for r in range(nranges)]
    futures = client.compute(tasks)
    _progress(futures, progress)
    return bounds, client.gather(futures)


# ---- step 4: install -----------------------------------------------------

def _install(out, paths, options, use_builder):
    """Makes the index at `out` from the range results (in key order): one
    ingest, or the fallback's bulk transactions into OUT.tmp renamed."""
    import pickle
    if use_builder and _tern.HAVE_INGEST:
        with _tern.Index(out, create=True, **options) as idx:
            if paths:
                idx.ingest(paths)
        return
    tmp = out + ".tmp"
    _discard(tmp)
    with _tern.Index(tmp, create=True, **options) as idx:
        for p in paths:
            with open(p, "rb") as f:
                recs = pickle.load(f)
            with idx.write(bulk=True) as txn:
                for k, v, t in recs:
                    txn.put(k, v, terms=t)
    os.rename(tmp, out)


def _progress(futures, progress):
    if progress is None:
        progress = sys.stderr.isatty()
    if progress:
        from distributed import progress as bar
        bar(futures)


def build_index(source, out, *, partitions=None, shards=None, client=None, version=None,
                staging=None, sample=100_000, blocksize="64MiB", progress=None, seed=0,
                keep_staging=False, **options):
    """Builds a tern index (or `shards` range shards and a shard map) at `out`
    from `source` on a dask.distributed cluster; see the module's doc.

    partitions: the number of key ranges (segments), default the source's
    partition count; shards: None for one index at `out`, else S between 1
    and partitions; client: a distributed.Client (default: the current
    one); version: the column (DataFrame), dict key or fourth tuple item
    (Bag) deciding between duplicate keys; staging: the shared folder for
    the segments (default OUT.staging, removed at the end unless
    keep_staging); sample: about how many keys to sample for the
    boundaries; blocksize: of TSV input partitions; options: index options
    (pulsing_threshold, inline_value_max, bloom_bits_per_key, fields for the
    segments and the index; write_buffer_bytes, map_size for the index).

    Returns a dict: documents, partitions (ranges), segments, and index, or
    map and shards (the shard directories).  `out` must not exist.
    """
    import distributed

    out = os.fspath(out)
    if os.path.exists(out):
        raise FileExistsError(out)
    client = client or distributed.default_client()
    if partitions is not None and int(partitions) < 1:
        raise ValueError("partitions must be >= 1")
    if shards is not None and not 1 <= shards <= (partitions or shards):
        raise ValueError("shards must be between 1 and partitions")
    use_builder = _tern.HAVE_BUILDER and _tern.HAVE_INGEST
    build_opts = {k: v for k, v in options.items()
                  if k in ("pulsing_threshold", "inline_value_max", "bloom_bits_per_key",
                           "fields")}
    tsv = _tsv_paths(source)
    if tsv is not None and version is not None:
        raise ValueError("a TSV source has no version column: duplicate keys are an error")
    staging = os.fspath(staging) if staging else out + ".staging"
    os.makedirs(staging, exist_ok=True)
    t0 = time.monotonic()
    if tsv is not None and use_builder and getattr(_tern, "HAVE_TSV", False):
        bounds, ranges = _ranges_tsv_c(client, tsv, partitions and int(partitions), staging,
                                       build_opts, blocksize, sample, seed, progress)
    else:
        bounds, ranges = _ranges_python(client, source, version, partitions, staging,
                                        build_opts, use_builder, blocksize, sample, seed,
                                        progress)
    nranges = len(bounds) + 1
    if shards is not None and shards > nranges:
        raise ValueError(f"{shards} shards asked, but the keys split into {nranges} "
                         "ranges only")
    ranges = sorted(ranges)
    ranges = [(p, path, d) for p, path, d in ranges if d > 0]
    docs = sum(d for _, _, d in ranges)
    result = {"documents": docs, "partitions": nranges, "segments": len(ranges)}
    log.info("shuffled and built %d segments of %d documents: %.2f s", len(ranges), docs,
             time.monotonic() - t0)
    t0 = time.monotonic()
    _install_all(client, out, bounds, ranges, shards, options, use_builder, progress, result)
    log.info("installed: %.2f s", time.monotonic() - t0)
    if not keep_staging:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _ranges_python(client, source, version, partitions, staging, build_opts, use_builder,
                   blocksize, sample, seed, progress):
    """Steps 1-3 in Python (DataFrame and Bag sources, or TSV without the C
    path): returns (bounds, [(part, path, documents)])."""
    import dask
    kind, parts = _partitions(source, version, blocksize)
    n = int(partitions or len(parts))
    t0 = time.monotonic()
    # 1. sample -> boundaries (up to sample/M keys of each input partition)
    per_part = max(1, sample // max(1, len(parts)))
    sampled = client.compute([dask.delayed(_sample_keys)(p, kind, version, per_part, seed)
                              for p in parts])
    import pickle
    bounds = _boundaries([k for blob in client.gather(sampled) for k in pickle.loads(blob)], n)
    nranges = len(bounds) + 1
    log.info("sampled %d input partitions: %d ranges, %.2f s", len(parts), nranges,
             time.monotonic() - t0)

    # 2. shuffle: every input partition split by range; 3. one task per range
    split = [dask.delayed(_split, nout=nranges)(p, kind, version, bounds) for p in parts]
    tasks = [dask.delayed(_write_range)(r, [s[r] for s in split], staging,
                                        version is not None, build_opts, use_builder)
             for r in range(nranges)]
    futures = client.compute(tasks)
    _progress(futures, progress)
    return bounds, client.gather(futures)


def _install_all(client, out, bounds, ranges, shards, options, use_builder, progress, result):
    """Step 4: one index at `out`, or `shards` indexes and the shard map."""
    nranges = len(bounds) + 1
    if shards is None:
        _install(out, [path for _, path, _ in ranges], options, use_builder)
        result["index"] = out
        return
    # Shard s takes ranges [s*R/S, (s+1)*R/S): its first range's lower
    # bound is the shard's.
    cuts = [(s * nranges) // shards for s in range(shards + 1)]
    shard_bounds = [bounds[c - 1] for c in cuts[1:-1]]
    dirs = [f"{out}.shard-{s:05d}" for s in range(shards)]
    for d in dirs:
        _discard(d)
    installs = [client.submit(_install, dirs[s],
                              [path for p, path, _ in ranges if cuts[s] <= p < cuts[s + 1]],
                              options, use_builder, pure=False)
                for s in range(shards)]
    _progress(installs, progress)
    client.gather(installs)
    write_map(out, shard_bounds, dirs)
    result.update(map=out, shards=dirs)

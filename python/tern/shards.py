# SPDX-License-Identifier: MIT
"""tern.shards — read-only serving of a range-sharded build.

A sharded build (tern.dask.build_index(..., shards=S)) writes S tern
indexes, each holding one contiguous key range, and a shard map file (JSON)
naming them with the boundaries between them::

    {"format": "tern-shards", "version": 1,
     "boundaries": ["<hex key>", ...],        # S - 1 keys, ascending
     "shards": ["shard-00000", ...]}          # directories, relative to the map

Shard i holds the keys k with boundaries[i-1] <= k < boundaries[i] (the
first from the smallest key, the last to the largest).

``tern.shards.open(map_file)`` returns a Router that opens every shard
read-only and routes reads by the boundaries: get() to one shard,
get_many() grouped by shard (one batch lookup per shard, answers in the
order asked), scan() merged in key order across shards.  This is the way
an application spreads one index over several machines' disks: put each
shard directory on its own disk (or machine, then route there with the
same boundaries: shard_of() gives the shard of a key), and keep the map.
"""

import bisect
import json
import os

from . import _tern

__all__ = ["open", "Router", "write_map", "read_map"]

FORMAT = "tern-shards"


def write_map(path, boundaries, shard_dirs):
    """Writes a shard map file at `path` (atomically: a temporary file
    renamed over it, fsynced).  `shard_dirs` are made relative to the map's
    directory when they lie under it."""
    if len(shard_dirs) != len(boundaries) + 1:
        raise ValueError("a shard map needs one more shard than boundaries")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("shard boundaries must ascend strictly")
    base = os.path.dirname(os.path.abspath(path))
    dirs = []
    for d in shard_dirs:
        d = os.path.abspath(d)
        dirs.append(os.path.relpath(d, base) if d.startswith(base + os.sep) else d)
    doc = {"format": FORMAT, "version": 1,
           "boundaries": [bytes(b).hex() for b in boundaries], "shards": dirs}
    tmp = path + ".tmp"
    with open_file(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(base, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


open_file = open  # the builtin, before this module's open() shadows it


def read_map(path):
    """Reads a shard map: (boundaries as bytes, absolute shard directories).
    ValueError when the file is not a tern shard map."""
    with open_file(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != 1:
        raise ValueError(f"{path}: not a tern shard map (version 1)")
    bounds = [bytes.fromhex(b) for b in doc["boundaries"]]
    base = os.path.dirname(os.path.abspath(path))
    dirs = [os.path.join(base, d) for d in doc["shards"]]
    if len(dirs) != len(bounds) + 1 or any(a >= b for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"{path}: shard map boundaries and shards do not agree")
    return bounds, dirs


def _key(k):
    return k.encode() if isinstance(k, str) else bytes(k)


class Router:
    """Read-only access to a sharded build (see the module's doc).  Thread
    safe as tern.Index is; close() (or a with block) closes every shard."""

    def __init__(self, map_file, **options):
        self.boundaries, self.dirs = read_map(map_file)
        self.shards = []
        try:
            for d in self.dirs:
                self.shards.append(_tern.Index(d, readonly=True, **options))
        except BaseException:
            self.close()
            raise

    def shard_of(self, key):
        """The number of the shard that holds `key`."""
        return bisect.bisect_right(self.boundaries, _key(key))

    def get(self, key, default=None):
        """The value of `key` (in its shard's last commit), or `default`."""
        return self.shards[self.shard_of(key)].get(key, default)

    def __getitem__(self, key):
        return self.shards[self.shard_of(key)][key]

    def __contains__(self, key):
        return key in self.shards[self.shard_of(key)]

    def get_many(self, keys):
        """The values of `keys` (None when absent) in the order given: each
        key routed to its shard, one get_many (one tern_get_batch) per
        shard, in C and without the GIL."""
        return _tern._get_many_sharded(self.shards, self.boundaries,
                                       keys if isinstance(keys, (list, tuple)) else list(keys))

    def scan(self, prefix=None, start=None, stop=None, reverse=False, limit=None, values=True):
        """(key, value) pairs (keys alone with values=False) with start <= key <
        stop beginning with prefix, in key order across the shards (descending
        with reverse=True), at most `limit`.  Only the shards whose range
        meets the bounds are read; each one's snapshot is held while its
        part is read."""
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        lo, hi = self._span(prefix, start, stop)
        order = range(lo, hi + 1)
        if reverse:
            order = reversed(order)
        left = limit
        for s in order:
            if left == 0:
                return
            with self.shards[s].snapshot() as snap:
                it = snap.scan(prefix=prefix, start=start, stop=stop, reverse=reverse,
                               limit=left, values=values)
                try:
                    for item in it:
                        yield item
                        if left is not None:
                            left -= 1
                finally:
                    it.close()

    def _span(self, prefix, start, stop):
        """The first and last shard a scan's bounds can touch."""
        lo_key = _key(start) if start is not None else None
        if prefix is not None:
            p = _key(prefix)
            lo_key = p if lo_key is None or p > lo_key else lo_key
        lo = bisect.bisect_right(self.boundaries, lo_key) if lo_key is not None else 0
        hi = len(self.shards) - 1
        if stop is not None:
            hi = bisect.bisect_left(self.boundaries, _key(stop))
        return lo, max(lo, min(hi, len(self.shards) - 1))

    def count(self):
        """Live documents over every shard."""
        total = 0
        for ix in self.shards:
            with ix.snapshot() as s:
                total += s.count()
        return total

    def close(self):
        """Closes every shard (BusyError from a shard still in use)."""
        while self.shards:
            self.shards[-1].close()
            self.shards.pop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<tern.shards.Router {len(self.dirs)} shards>"


def open(map_file, **options):  # noqa: A001 (tern.shards.open)
    """Opens a sharded build for reading: a Router over the shards the map
    file names, each opened read-only (options as tern.open's, e.g.
    pread=True)."""
    return Router(map_file, **options)

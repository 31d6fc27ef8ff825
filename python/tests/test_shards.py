# SPDX-License-Identifier: MIT
"""tern.shards: the map file and the Router's get, get_many and merged scan
against a dict reference, on shards written directly (no Dask)."""
import bisect
import json

import pytest

import tern
import tern.shards


def make_shards(tmp_path, rng, nshards=4, n=4000):
    ref = {}
    for _ in range(n):
        ref[bytes(rng.choice(b"abcdefgh") for _ in range(rng.randint(1, 5)))] = \
            b"v%d" % rng.randrange(1000)
    keys = sorted(ref)
    bounds = sorted({keys[(i * len(keys)) // nshards] for i in range(1, nshards)})
    dirs = [str(tmp_path / f"shard{i}") for i in range(len(bounds) + 1)]
    idxs = [tern.open(d, create=True) for d in dirs]
    txns = [ix.write(bulk=True) for ix in idxs]
    for k in keys:
        txns[bisect.bisect_right(bounds, k)].put(k, ref[k])
    for t in txns:
        t.commit()
    for ix in idxs:
        ix.close()
    mapf = str(tmp_path / "map.json")
    tern.shards.write_map(mapf, bounds, dirs)
    return mapf, ref, bounds


def test_router_against_reference(tmp_path, rng):
    mapf, ref, bounds = make_shards(tmp_path, rng)
    doc = json.load(open(mapf))
    assert doc["shards"][0] == "shard0"  # relative to the map
    keys = sorted(ref)
    with tern.shards.open(mapf) as r:
        assert r.count() == len(ref)
        probe = [bytes(rng.choice(b"abcdefghi") for _ in range(rng.randint(1, 5)))
                 for _ in range(3000)]
        assert r.get_many(probe) == [ref.get(k) for k in probe]
        assert r.get_many(iter(probe[:10])) == [ref.get(k) for k in probe[:10]]
        assert r.get_many([k.decode() for k in probe[:10]]) == [ref.get(k) for k in probe[:10]]
        assert r.get_many([]) == []
        with pytest.raises(tern.InvalidError):
            r.get_many([b"a", b""])
        with pytest.raises(TypeError):
            r.get_many([1])
        for k in probe[:200]:
            assert r.get(k) == ref.get(k)
            assert (k in r) == (k in ref)
        with pytest.raises(KeyError):
            r[b"zzzzzzz"]
        assert list(r.scan()) == sorted(ref.items())
        cands = [None, b"a", b"c", b"cd", b"h", b"z"] + bounds
        for start in cands:
            for stop in cands:
                for prefix in [None, b"b", b"cd"]:
                    for reverse in (False, True):
                        for limit in (None, 3):
                            want = [k for k in keys if (start is None or k >= start)
                                    and (stop is None or k < stop)
                                    and (prefix is None or k.startswith(prefix))]
                            if reverse:
                                want.reverse()
                            if limit is not None:
                                want = want[:limit]
                            got = list(r.scan(prefix=prefix, start=start, stop=stop,
                                              reverse=reverse, limit=limit, values=False))
                            assert got == want, (start, stop, prefix, reverse, limit)
        # An abandoned scan leaves no snapshot open: the router closes.
        it = r.scan()
        next(it)
        it.close()


def test_bad_maps(tmp_path):
    p = tmp_path / "m.json"
    p.write_text('{"format": "other"}')
    with pytest.raises(ValueError):
        tern.shards.open(str(p))
    with pytest.raises(ValueError):
        tern.shards.write_map(str(p), [b"b", b"a"], ["x", "y", "z"])
    with pytest.raises(ValueError):
        tern.shards.write_map(str(p), [b"a"], ["x"])
    tern.shards.write_map(str(p), [b"m"], [str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(tern.NotIndexError):
        tern.shards.open(str(p))  # the shards are not there

# SPDX-License-Identifier: MIT
"""Shared by the Dask tests: a real LocalCluster with 2 worker processes,
reference data and the exactness check."""
import random

import tern
import tern.shards


def cluster():
    from distributed import Client, LocalCluster
    cl = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40)
    return cl, Client(cl)


def reference(seed, n, dup_every=0):
    """n records (key, value, terms) with random keys; every dup_every-th
    key repeated with a higher version.  Returns (pandas frame, dict key ->
    (value, terms))."""
    import pandas as pd
    rng = random.Random(seed)
    keys = [b"k%010d" % rng.randrange(10**10) for _ in range(n)]
    keys = list(dict.fromkeys(keys))
    rows = {"key": [], "value": [], "terms": [], "version": []}
    ref = {}
    for i, k in enumerate(keys):
        v = b"v%d" % rng.randrange(10**6)
        ts = [("color", ["red", "blue", "green"][i % 3])] if i % 7 == 0 else None
        rows["key"].append(k)
        rows["value"].append(v)
        rows["terms"].append(ts)
        rows["version"].append(1)
        ref[k] = (v, ts)
        if dup_every and i % dup_every == 0:
            v2 = v + b"-new"
            rows["key"].append(k)
            rows["value"].append(v2)
            rows["terms"].append(None)
            rows["version"].append(2)
            ref[k] = (v2, None)
    pdf = pd.DataFrame(rows).sample(frac=1, random_state=seed % (2**31)).reset_index(drop=True)
    return pdf, ref


def check_index(snap_or_router, ref):
    items = sorted((k, v) for k, (v, _) in ref.items())
    assert list(snap_or_router.scan()) == items


def check_terms(snap, ref):
    for color in ["red", "blue", "green"]:
        want = sorted(k for k, (_, ts) in ref.items() if ts and ("color", color) in ts)
        assert snap.search(("color", color)) == want


def write_tsv(ref, paths):
    """The reference's documents as TSV lines (`tern import`'s format) spread
    over `paths` in a shuffled order."""
    items = sorted(ref.items())
    random.Random(len(items)).shuffle(items)
    for j, p in enumerate(paths):
        with open(p, "wb") as f:
            for k, (v, ts) in items[j::len(paths)]:
                f.write(k + b"\t" + v + b"".join(b"\t%s:%s" % (fl.encode(), t.encode())
                                                for fl, t in ts or []) + b"\n")
    return [str(p) for p in paths]

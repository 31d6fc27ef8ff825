# SPDX-License-Identifier: MIT
"""tern.dask.build_index on a real LocalCluster with 2 worker processes:
300,000 records into one index and into 3 shards, exactly as the
reference; duplicate keys by version and as an error; TSV input."""
import os

import pytest

import tern
import tern.shards

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
import tern.dask  # noqa: E402

from dask_common import check_index, check_terms, cluster, reference, write_tsv  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TERN_PY_SANITIZED") == "1",
                                reason="worker processes under ASan: too slow to be useful")


@pytest.fixture(scope="module")
def client():
    cl, c = cluster()
    yield c
    c.close()
    cl.close()


@pytest.fixture(scope="module")
def big(seed_module=None):
    import time
    seed = int(os.environ.get("TERN_SEED", time.time_ns() % (1 << 31)))
    print(f"seed={seed}")
    pdf, ref = reference(seed, 300_000)
    return dd.from_pandas(pdf.drop(columns=["version"]), npartitions=8), ref


@pytest.fixture(scope="module")
def big_tsv(big, tmp_path_factory):
    """The same 300,000 documents as TSV files (the C record path)."""
    _, ref = big
    d = tmp_path_factory.mktemp("tsv")
    return write_tsv(ref, [d / f"part{j}.tsv" for j in range(3)]), ref


def test_tsv_one_index_exact(client, big_tsv, tmp_path):
    files, ref = big_tsv
    out = str(tmp_path / "idx")
    r = tern.dask.build_index(files, out, partitions=6, client=client, progress=False,
                              blocksize="1MiB")
    assert r["documents"] == len(ref) and r["partitions"] == 6
    with tern.open(out, readonly=True) as idx:
        idx.verify()
        with idx.snapshot() as s:
            assert s.count() == len(ref)
            check_index(s, ref)
            check_terms(s, ref)


def test_tsv_three_shards_exact(client, big_tsv, tmp_path):
    files, ref = big_tsv
    out = str(tmp_path / "map.json")
    r = tern.dask.build_index(files, out, partitions=6, shards=3, client=client,
                              progress=False, blocksize="2MiB")
    assert len(r["shards"]) == 3 and r["documents"] == len(ref)
    with tern.shards.open(out) as router:
        assert router.count() == len(ref)
        check_index(router, ref)
        for i, ix in enumerate(router.shards):
            with ix.snapshot() as s:
                check_terms(s, {k: v for k, v in ref.items() if router.shard_of(k) == i})


def test_tsv_duplicates_and_errors(client, tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_bytes(b"".join(b"k%05d\tv\n" % i for i in range(0, 2000, 2)))
    b.write_bytes(b"".join(b"k%05d\tw\n" % i for i in range(1, 2000, 2)) + b"k00100\tagain\n")
    with pytest.raises(tern.dask.DuplicateKeyError) as ei:
        tern.dask.build_index([str(a), str(b)], str(tmp_path / "d"), partitions=3,
                              client=client, progress=False)
    assert ei.value.key == b"k00100"
    with pytest.raises(ValueError):
        tern.dask.build_index(str(a), str(tmp_path / "v"), client=client, version="v",
                              progress=False)
    b.write_bytes(b"k1\tv\nk2\\q\tv\n")
    with pytest.raises(tern.InvalidError) as ei:
        tern.dask.build_index([str(a), str(b)], str(tmp_path / "m"), partitions=3,
                              client=client, progress=False)
    assert f"{b}:2: bad escape" in str(ei.value)
    r = tern.dask.build_index(str(tmp_path / "a*.tsv"),  # a glob
                              str(tmp_path / "g"), partitions=4, client=client, progress=False)
    assert r["documents"] == 1000


def test_one_index_exact(client, big, tmp_path):
    df, ref = big
    out = str(tmp_path / "idx")
    r = tern.dask.build_index(df, out, partitions=6, client=client, progress=False)
    assert r["documents"] == len(ref) and r["index"] == out
    assert not os.path.exists(out + ".staging")
    with tern.open(out, readonly=True) as idx:
        idx.verify()
        with idx.snapshot() as s:
            assert s.count() == len(ref)
            check_index(s, ref)
            check_terms(s, ref)


def test_three_shards_exact(client, big, tmp_path):
    df, ref = big
    out = str(tmp_path / "map.json")
    r = tern.dask.build_index(df, out, partitions=6, shards=3, client=client, progress=False)
    assert len(r["shards"]) == 3 and r["documents"] == len(ref)
    with tern.shards.open(out) as router:
        assert router.count() == len(ref)
        check_index(router, ref)
        keys = list(ref)[:5000] + [b"absent-%d" % i for i in range(100)]
        assert router.get_many(keys) == [ref[k][0] if k in ref else None for k in keys]
        sizes = []
        for ix in router.shards:
            with ix.snapshot() as s:
                sizes.append(s.count())
                check_terms(s, {k: v for k, v in ref.items()
                                if router.shard_of(k) == router.shards.index(ix)})
        assert min(sizes) > 0.2 * len(ref), sizes


def test_versions_and_duplicates(client, tmp_path, seed):
    pdf, ref = reference(seed, 5000, dup_every=5)
    df = dd.from_pandas(pdf, npartitions=4)
    out = str(tmp_path / "v")
    tern.dask.build_index(df, out, partitions=3, client=client, version="version",
                          progress=False)
    with tern.open(out, readonly=True) as idx, idx.snapshot() as s:
        check_index(s, ref)
    with pytest.raises(tern.dask.DuplicateKeyError) as ei:
        tern.dask.build_index(df, str(tmp_path / "d"), partitions=3, client=client,
                              progress=False)
    assert ei.value.key in ref
    with pytest.raises(FileExistsError):
        tern.dask.build_index(df, out, client=client, progress=False)


def test_tsv_source(client, tmp_path):
    lines = []
    ref = {}
    for i in range(3000):
        k = b"key\\t%05d" % (i * 7919 % 3001)  # an escaped TAB in every key
        v = b"val\\x00%d" % i
        lines.append(k + b"\t" + v + (b"\tf:t%d" % (i % 3) if i % 2 else b"") + b"\n")
        ref[k.replace(b"\\t", b"\t")] = v.replace(b"\\x00", b"\x00")
    files = []
    for j in range(3):
        p = tmp_path / f"in{j}.tsv"
        p.write_bytes(b"".join(lines[j::3]) + b"\n")  # and a blank line
        files.append(str(p))
    out = str(tmp_path / "t")
    r = tern.dask.build_index(files, out, partitions=4, client=client, progress=False)
    assert r["documents"] == len(ref)
    with tern.open(out, readonly=True) as idx, idx.snapshot() as s:
        assert list(s.scan()) == sorted(ref.items())
        assert len(s.search(("f", "t1"))) == sum(1 for i in range(3000) if i % 2 and i % 3 == 1)


def test_parse_tsv_line():
    p = tern.dask.parse_tsv_line
    assert p(b"k\tv\r\n") == (b"k", b"v", [])
    assert p(b"\n") is None
    assert p(b"a\\\\b\tv\\n\tf\\x3ag:t:u") == (b"a\\b", b"v\n", [(b"f:g", b"t:u")])
    for bad in [b"k", b"\tv", b"k\tv\tnofield", b"k\tv\t", b"k\\q\tv", b"k\\x4\tv"]:
        with pytest.raises(ValueError):
            p(bad)

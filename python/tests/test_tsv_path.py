# SPDX-License-Identifier: MIT
"""tern.dask's C record path for TSV sources, without a cluster:
_tern._tsv_sample, _tsv_split (byte ranges of TSV files parsed as
`tern import` parses them, one bytes blob of records per key range) and
_tsv_build (one range sorted and built as a segment), against a dict
reference on random records with a printed seed (every escape, CRLF, blank
lines, a last line without newline, terms), against `tern import` of the
same files, and their edge cases: ranges cut at every byte, duplicate
keys, empty ranges, malformed lines (named by file and line)."""
import bisect
import os
import random
import subprocess

import pytest

import tern
import tern.dask as td
from tern import _tern

pytestmark = pytest.mark.skipif(not getattr(_tern, "HAVE_TSV", False),
                                reason="built without the C TSV path")

SPECIAL = b"\\\t\n\r\x00\x7f\x80\xff:x\x1b "


def rand_bytes(rng, lo, hi):
    return bytes(rng.choice(SPECIAL) if rng.random() < 0.3 else rng.randrange(256)
                 for _ in range(rng.randint(lo, hi)))


def escape(rng, s, colon=False):
    """s in the escaped form, with random alternative spellings."""
    out = bytearray()
    for c in s:
        named = {0x5C: b"\\\\", 0x09: b"\\t", 0x0A: b"\\n", 0x0D: b"\\r"}.get(c)
        if colon and c == 0x3A:
            named = b"\\x3a"
        if named and rng.random() < 0.8:
            out += named
        elif named or c < 0x20 or c == 0x7F or rng.random() < 0.05:
            out += (b"\\x%02x" if rng.random() < 0.5 else b"\\x%02X") % c
        else:
            out.append(c)
    return bytes(out)


def random_corpus(rng, n):
    """n documents {key: (value, sorted terms)} and their TSV lines."""
    ref, lines = {}, []
    while len(ref) < n:
        k = rand_bytes(rng, 1, 12)
        if k in ref:
            continue
        v = rand_bytes(rng, 0, 20)
        terms = sorted({(f, t) for f, t in
                        ((bytes(rng.choice(b"abc") for _ in range(rng.randint(1, 2))),
                          rand_bytes(rng, 1, 6)) for _ in range(rng.choice([0, 0, 1, 2])))})
        ref[k] = (v, terms)
        cols = [escape(rng, k), escape(rng, v)] + [escape(rng, f, colon=True) + b":" + escape(rng, t)
                                                   for f, t in terms]
        lines.append(b"\t".join(cols))
    return ref, lines


def write_files(rng, tmp_path, lines, nfiles):
    paths = []
    for j in range(nfiles):
        mine = lines[j::nfiles]
        out = bytearray()
        for i, ln in enumerate(mine):
            if rng.random() < 0.05:
                out += b"\n" if rng.random() < 0.5 else b"\r\n"  # blank lines
            out += ln
            if i + 1 < len(mine) or rng.random() < 0.5:  # the last needs no newline
                out += b"\r\n" if rng.random() < 0.2 else b"\n"
        p = tmp_path / f"in{j}.tsv"
        p.write_bytes(bytes(out))
        paths.append(str(p))
    return paths


def blob_records(blob):
    """Decodes a _tsv_split blob (python/src/tsvrec.h) independently."""
    recs, i = [], 0
    u32 = lambda at: int.from_bytes(blob[at:at + 4], "little")  # noqa: E731
    while i < len(blob):
        kl, vl, nt = u32(i), u32(i + 4), u32(i + 8)
        i += 12
        k, v = bytes(blob[i:i + kl]), bytes(blob[i + kl:i + kl + vl])
        i += kl + vl
        terms = []
        for _ in range(nt):
            fl, tl = u32(i), u32(i + 4)
            i += 8
            assert blob[i + fl - 1] == 0  # the field is NUL-terminated
            terms.append((bytes(blob[i:i + fl - 1]), bytes(blob[i + fl:i + fl + tl])))
            i += fl + tl
        recs.append((k, v, sorted(set(terms))))
    return recs


def random_cuts(rng, size, n):
    cuts = sorted({0, size} | {rng.randrange(size + 1) for _ in range(n)})
    return list(zip(cuts, cuts[1:]))


def split_all(paths, cuts_of, bounds):
    out = [[] for _ in range(len(bounds) + 1)]
    for p in paths:
        for s, e in cuts_of(p):
            blobs = _tern._tsv_split(p, s, e, bounds)
            assert len(blobs) == len(bounds) + 1
            for r, b in enumerate(blobs):
                out[r].append(b)
    return out


def index_items(path):
    with tern.open(path, readonly=True) as idx, idx.snapshot() as s:
        items = list(s.scan())
        terms = {}
        for k, _ in items:
            terms[k] = []
        for f in (b"a", b"b", b"c", b"aa", b"ab", b"ac", b"ba", b"bb", b"bc", b"ca", b"cb", b"cc"):
            for t, _ in s.terms(f):
                for k in s.search((f, t)):
                    terms[k].append((f, t))
        return items, {k: sorted(v) for k, v in terms.items()}


def test_random_records_exact(tmp_path, seed):
    rng = random.Random(seed)
    ref, lines = random_corpus(rng, 3000)
    paths = write_files(rng, tmp_path, lines, rng.randint(1, 3))
    keys = sorted(ref)
    # boundaries: some from the keys, one below all and one above all (empty ranges)
    bounds = sorted({rng.choice(keys) for _ in range(rng.randint(1, 6))} | {b"\x00", b"\xff" * 13})
    cuts = {p: random_cuts(rng, os.path.getsize(p), rng.randint(0, 40)) for p in paths}
    parts = split_all(paths, cuts.__getitem__, bounds)
    seen = {}
    for r, blobs in enumerate(parts):
        for b in blobs:
            for k, v, t in blob_records(b):
                assert bisect.bisect_right(bounds, k) == r, (k, r)
                assert k not in seen
                seen[k] = (v, t)
    assert seen == ref
    # build every range, ingest, compare with the reference and with `tern import`
    segs = []
    for r, blobs in enumerate(parts):
        seg = str(tmp_path / f"seg{r}")
        info = _tern._tsv_build(blobs, seg, td.DuplicateKeyError)
        want = sum(1 for k in ref if bisect.bisect_right(bounds, k) == r)
        assert info["documents"] == want
        if want:
            assert info["first_key"] == min(k for k in ref if bisect.bisect_right(bounds, k) == r)
            segs.append(seg)
        else:
            assert not os.path.exists(seg)
    out = str(tmp_path / "built")
    with tern.open(out, create=True) as idx:
        idx.ingest(segs)
    items, terms = index_items(out)
    assert items == sorted((k, v) for k, (v, _) in ref.items())
    assert terms == {k: t for k, (_, t) in ref.items()}
    tern_bin = os.environ.get("TERN_BIN")
    if tern_bin:
        imp = str(tmp_path / "imported")
        for p in paths:
            subprocess.run([tern_bin, "import", "-q", imp, p], check=True)
        assert index_items(imp) == (items, terms)


def test_every_cut_covers_each_line_once(tmp_path):
    data = b"a\t1\r\n\nbb\t2\tf:x\nc\\td\t3\n\r\n\nd\t4\te:y:z\r\ne\t\nf\t6"
    p = tmp_path / "cuts.tsv"
    p.write_bytes(data)
    want = [(b"a", b"1", []), (b"bb", b"2", [(b"f", b"x")]), (b"c\td", b"3", []),
            (b"d", b"4", [(b"e", b"y:z")]), (b"e", b"", []), (b"f", b"6", [])]
    for c in range(len(data) + 1):
        for c2 in range(c, len(data) + 1):
            got = []
            for s, e in [(0, c), (c, c2), (c2, len(data) + 7)]:
                for b in _tern._tsv_split(str(p), s, e, [b"c"]):
                    got += blob_records(b)
            assert sorted(got) == want, (c, c2)


def test_duplicate_keys(tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_bytes(b"k1\tv1\nk2\tv2\n")
    b.write_bytes(b"k0\tv0\nk\\x32\tother\n")  # k2 again, spelled differently
    blobs = [_tern._tsv_split(str(p), 0, 100, [])[0] for p in (a, b)]
    with pytest.raises(td.DuplicateKeyError) as ei:
        _tern._tsv_build(blobs, str(tmp_path / "seg"), td.DuplicateKeyError)
    assert ei.value.key == b"k2"
    assert not os.path.exists(tmp_path / "seg") and not os.path.exists(tmp_path / "seg.tmp")


def test_empty_ranges(tmp_path):
    p = tmp_path / "e.tsv"
    p.write_bytes(b"\n\r\n")
    assert _tern._tsv_split(str(p), 0, 10, [b"m", b"n"]) == (b"", b"", b"")
    assert _tern._tsv_split(str(p), 5, 10, [b"m"]) == (b"", b"")  # past the end
    assert _tern._tsv_build([b"", b""], str(tmp_path / "seg"), td.DuplicateKeyError) == \
        {"documents": 0}
    assert _tern._tsv_build([], str(tmp_path / "seg"), td.DuplicateKeyError) == {"documents": 0}
    assert not os.path.exists(tmp_path / "seg")
    with pytest.raises(tern.InvalidError):  # not a blob of _tsv_split
        _tern._tsv_build([b"\x05\x00\x00\x00"], str(tmp_path / "seg"), td.DuplicateKeyError)


@pytest.mark.parametrize("bad,reason", [
    (b"k\\q\tv", "bad escape"), (b"\tv", "empty key"), (b"novalue", "no TAB after key"),
    (b"k\tv\tnofield", "term without 'field:' in column 3"), (b"k\tv\t", "column 3"),
    (b"k\\x4\tv", "escape"), (b"k\tv\t:t", "empty field")])
def test_malformed_line_names_file_and_line(tmp_path, bad, reason):
    lines = [b"key%04d\tval" % i for i in range(500)]
    lines[317] = bad
    p = tmp_path / "bad.tsv"
    p.write_bytes(b"\n".join(lines) + b"\n")
    size = os.path.getsize(p)
    hit = 0
    for s in range(0, size, 1000):  # blocks of 1000 bytes: the line is in a later one
        try:
            _tern._tsv_split(str(p), s, s + 1000, [b"key0200"])
        except tern.InvalidError as e:
            assert str(e).startswith(f"{p}:318: "), str(e)
            assert reason in str(e)
            hit += 1
    assert hit == 1
    with pytest.raises(OSError):
        _tern._tsv_split(str(tmp_path / "absent.tsv"), 0, 10, [])


def test_sample_keys_are_the_files(tmp_path, seed):
    rng = random.Random(seed)
    ref, lines = random_corpus(rng, 500)
    (p,) = write_files(rng, tmp_path, lines, 1)
    size = os.path.getsize(p)
    got = td._blob_keys(_tern._tsv_sample(p, 0, size, 200, seed))
    assert 100 < len(got) <= 200
    assert set(got) <= set(ref)
    long_key = b"x" * 1000
    q = tmp_path / "long.tsv"
    q.write_bytes(b"".join(long_key + b"%04d\tv\n" % i for i in range(50)))
    got = td._blob_keys(_tern._tsv_sample(str(q), 0, os.path.getsize(q), 20, seed))
    assert got and all(k.startswith(long_key) for k in got)

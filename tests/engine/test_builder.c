/* SPDX-License-Identifier: MIT */
/*
 * test_builder.c — the public segment builder (tern_builder_*), its
 * verifier, tern_split_keys and tern_export.
 *
 * A built segment is read back with the codec's reader and compared with
 * a sorted reference (every key, value and term's doc list); keys out of
 * order, an existing OUT, abort, failed writes at every call (faultfs) and
 * damaged, truncated, foreign and stray files each give their error and
 * leave nothing finished-looking.  Split is held to ±10% of equal parts
 * against a sorted array of the live keys, on random and skewed keys, one
 * segment or many plus the buffer; export of a range is compared with the
 * reference documents of that range, terms included.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include "codec/frame.h"
#include "codec/segment.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- reference */

typedef struct ref_doc {
  uint8_t key[ET_KEY_MAX];
  size_t klen;
  et_doc d;
} ref_doc;

static int ref_cmp(const void *a, const void *b) {
  const ref_doc *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* n random documents with distinct keys, sorted. */
static ref_doc *ref_make(tu_rng *r, size_t n, uint64_t salt) {
  ref_doc *v = calloc(n, sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) {
    v[i].klen = et_key((uint32_t)i, salt, v[i].key);
    et_doc_random(r, &v[i].d);
  }
  qsort(v, n, sizeof *v, ref_cmp);
  return v;
}

static void ref_free(ref_doc *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    et_doc_clear(&v[i].d);
  free(v);
}

static void build(const char *path, const ref_doc *v, size_t n, const tern_options *o,
                  tern_build_info *info) {
  tern_builder *b;
  ET_OK(tern_builder_open(&b, path, o));
  for (size_t i = 0; i < n; i++) {
    tern_term t[8];
    size_t nt = et_doc_terms(&v[i].d, t);
    ET_OK(tern_builder_add(b, v[i].key, v[i].klen, v[i].d.val, v[i].d.vlen, t, nt));
  }
  ET_OK(tern_builder_finish(b, info));
}

/* The built segment, read with the codec, against v[0..n). */
static void check_segment(const char *path, const char *name, const ref_doc *v, size_t n) {
  tern_seg *s;
  ET_OK(tern_seg_open(&s, path, name, TERN_IO_PREAD));
  assert_int_equal(tern_seg_max_doc(s), n);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  const tern_seg_field *u = tern_seg_unique_field(s);
  assert_non_null(u);
  int rc = tern_seg_first_term(s, u, &c, &e);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(e.len, v[i].klen);
    assert_memory_equal(e.term, v[i].key, e.len);
    tern_slice val;
    ET_OK(tern_seg_value(s, &e, &c, &val));
    assert_int_equal(val.len, v[i].d.vlen);
    if (val.len) assert_memory_equal(val.data, v[i].d.val, val.len);
    rc = tern_seg_next_term(s, &c, &e);
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  /* Every term of the vocabulary: its docs are the ranks of the docs having it. */
  uint32_t *want = malloc((n + 1) * sizeof *want);
  for (size_t k = 0; k < ET_VOCAB; k++) {
    et_term t = et_vocab(k);
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
      if (et_doc_has(&v[i].d, &t)) want[nw++] = (uint32_t)i;
    const char *fname = et_field_names[t.field];
    const tern_seg_field *f = tern_seg_find_field(s, fname, strlen(fname));
    rc = f ? tern_seg_seek_exact(s, f, t.bytes, t.len, &c, &e) : TERN_NOTFOUND;
    if (nw == 0) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    tern_postings_iter it;
    ET_OK(tern_seg_postings(s, &e, &it));
    uint32_t doc;
    for (size_t i = 0; i < nw; i++) {
      ET_OK(tern_postings_iter_next(&it, &doc));
      assert_int_equal(doc, want[i]);
    }
    ET_OK(tern_postings_iter_next(&it, &doc));
    assert_int_equal(doc, TERN_DOC_END);
    tern_postings_iter_release(&it);
  }
  free(want);
  tern_seg_cursor_release(&c);
  tern_seg_close(s);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static char *tmp_of(const char *path) {
  char *t = malloc(strlen(path) + 5);
  sprintf(t, "%s.tmp", path);
  return t;
}

/* ---------------------------------------------------------------- builder */

static void test_build_against_reference(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  char *dir = tu_tmpdir("builder");
  size_t n = 20000 * tu_scale();
  ref_doc *v = ref_make(&r, n, seed);
  /* Default options, then a pulsing threshold of 0, no filter, inline 0. */
  for (int variant = 0; variant < 2; variant++) {
    char name[32];
    sprintf(name, "out%d", variant);
    char *out = tu_path(dir, name);
    tern_options o;
    tern_options_init(&o);
    if (variant) {
      o.pulsing_threshold = 0;
      o.bloom_bits_per_key = 0;
      o.inline_value_max = 0;
    }
    tern_build_info info;
    build(out, v, n, &o, &info);
    assert_int_equal(info.documents, n);
    assert_int_equal(info.first_len, v[0].klen);
    assert_memory_equal(info.first_key, v[0].key, v[0].klen);
    assert_int_equal(info.last_len, v[n - 1].klen);
    assert_memory_equal(info.last_key, v[n - 1].key, v[n - 1].klen);
    assert_true(info.bytes > 0);
    assert_string_equal(info.name, "s000000000001");
    char *tmp = tmp_of(out);
    assert_false(exists(tmp));
    free(tmp);
    tern_build_info vi;
    ET_OK(tern_builder_verify(out, &vi));
    assert_int_equal(vi.documents, n);
    assert_int_equal(vi.bytes, info.bytes);
    check_segment(out, info.name, v, n);
    free(out);
  }
  ref_free(v, n);
  tu_rmtree(dir);
  free(dir);
}

static void test_keys_out_of_order(void **state) {
  (void)state;
  char *dir = tu_tmpdir("builder_order");
  char *out = tu_path(dir, "out");
  tern_builder *b;
  ET_OK(tern_builder_open(&b, out, NULL));
  ET_OK(tern_builder_add(b, "b\tx", 3, "1", 1, NULL, 0));
  assert_int_equal(tern_builder_add(b, "a\001", 2, "2", 1, NULL, 0), TERN_EINVAL);
  assert_non_null(strstr(tern_errmsg(), "a\\x01"));
  assert_non_null(strstr(tern_errmsg(), "b\\tx"));
  assert_int_equal(tern_builder_add(b, "b\tx", 3, "2", 1, NULL, 0), TERN_EINVAL);
  assert_non_null(strstr(tern_errmsg(), "duplicate"));
  assert_int_equal(tern_builder_add(b, "", 0, "2", 1, NULL, 0), TERN_EINVAL);
  tern_term bad = {"", "t", 1};
  assert_int_equal(tern_builder_add(b, "c", 1, "2", 1, &bad, 1), TERN_EINVAL);
  /* still usable after rejected calls */
  ET_OK(tern_builder_add(b, "c", 1, "3", 1, NULL, 0));
  tern_build_info info;
  ET_OK(tern_builder_finish(b, &info));
  assert_int_equal(info.documents, 2);
  ET_OK(tern_builder_verify(out, NULL));
  free(out);
  tu_rmtree(dir);
  free(dir);
}

static void test_out_exists_and_abort(void **state) {
  (void)state;
  char *dir = tu_tmpdir("builder_exists");
  char *out = tu_path(dir, "out");
  char *f = tu_path(out, "x");
  tern_builder *b;
  /* a non-empty directory, then a file: refused, untouched */
  assert_int_equal(mkdir(out, 0777), 0);
  tu_write_file(f, "x", 1);
  assert_int_equal(tern_builder_open(&b, out, NULL), TERN_EINVAL);
  assert_null(b);
  assert_non_null(strstr(tern_errmsg(), out));
  assert_true(exists(f));
  tu_rmtree(out);
  tu_write_file(out, "x", 1);
  assert_int_equal(tern_builder_open(&b, out, NULL), TERN_EINVAL);
  unlink(out);
  /* an empty directory is fine; abort leaves it as it was */
  assert_int_equal(mkdir(out, 0777), 0);
  ET_OK(tern_builder_open(&b, out, NULL));
  ET_OK(tern_builder_add(b, "k", 1, "v", 1, NULL, 0));
  ET_OK(tern_builder_abort(b));
  char *tmp = tmp_of(out);
  assert_false(exists(tmp));
  rmdir(out);
  /* absent: abort leaves nothing */
  ET_OK(tern_builder_open(&b, out, NULL));
  assert_true(exists(tmp));
  ET_OK(tern_builder_add(b, "k", 1, "v", 1, NULL, 0));
  ET_OK(tern_builder_abort(b));
  assert_false(exists(tmp));
  assert_false(exists(out));
  /* no document: an empty directory, which verifies as an empty build */
  ET_OK(tern_builder_open(&b, out, NULL));
  tern_build_info info;
  ET_OK(tern_builder_finish(b, &info));
  assert_int_equal(info.documents, 0);
  ET_OK(tern_builder_verify(out, &info));
  assert_int_equal(info.documents, 0);
  /* a leftover OUT.tmp of a crashed build is cleared by the next build */
  rmdir(out);
  assert_int_equal(mkdir(tmp, 0777), 0);
  char *stale = tu_path(tmp, "s000000000001.tim.tmp");
  tu_write_file(stale, "junk", 4);
  ET_OK(tern_builder_open(&b, out, NULL));
  ET_OK(tern_builder_add(b, "k", 1, "v", 1, NULL, 0));
  ET_OK(tern_builder_finish(b, NULL));
  ET_OK(tern_builder_verify(out, NULL));
  free(stale);
  free(tmp);
  free(f);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* Nothing in dir, or only the hard links faultfs keeps of the files
 * unlinked since its last reset (to undo them at a power loss): the
 * directory itself then stays, which it would not without faultfs. */
static void assert_only_stashes(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !strstr(e->d_name, ".ffstash")) {
      fprintf(stderr, "%s/%s left behind\n", dir, e->d_name);
      fail();
    }
  closedir(d);
  ff_reset(); /* drops the stashes */
  assert_int_equal(rmdir(dir), 0);
}

/* Fails the n-th call of each kind the codec's file layer makes during a
 * build, for every n until a build succeeds: each failure reaches the
 * caller and leaves neither OUT nor OUT.tmp. */
static void test_faults_every_call(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  char *dir = tu_tmpdir("builder_faults");
  char *out = tu_path(dir, "out");
  char *tmp = tmp_of(out);
  size_t n = 3000;
  ref_doc *v = ref_make(&r, n, seed);
  static const ff_kind kinds[] = {FF_OPEN, FF_WRITE, FF_SYNC, FF_RENAME};
  ff_install();
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    for (uint64_t nth = 1;; nth++) {
      ff_reset();
      ff_fail_nth(kinds[k], nth, EIO);
      tern_builder *b;
      int rc = tern_builder_open(&b, out, NULL);
      for (size_t i = 0; rc == TERN_OK && i < n; i++) {
        tern_term t[8];
        size_t nt = et_doc_terms(&v[i].d, t);
        rc = tern_builder_add(b, v[i].key, v[i].klen, v[i].d.val, v[i].d.vlen, t, nt);
      }
      if (b && rc == TERN_OK) {
        rc = tern_builder_finish(b, NULL);
      } else if (b) {
        assert_int_equal(rc, -EIO);
        (void)tern_builder_abort(b); /* may fail on faultfs's stashes, checked below */
      }
      if (rc == TERN_OK) {
        assert_true(ff_count(kinds[k]) < nth); /* the fault was never reached */
        ff_reset();
        ET_OK(tern_builder_verify(out, NULL));
        tu_rmtree(out);
        break;
      }
      assert_int_equal(rc, -EIO);
      assert_true(strlen(tern_errmsg()) > 0);
      assert_false(exists(out));
      assert_only_stashes(tmp);
    }
  }
  ff_uninstall();
  ref_free(v, n);
  free(tmp);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* Cuts the power at every sync point of a build (unsynced writes lost,
 * all or a random part of them; creations and renames not made durable
 * undone): after the reboot OUT is absent, or, when the build returned
 * TERN_OK, a segment that verifies; and the next build of OUT, which
 * clears what the cut left in OUT.tmp, succeeds.  (The directory's own
 * rename is not replayed by faultfs: it comes after the last sync the
 * files need, and a failed parent fsync renames it back.) */
static void test_power_cut_at_every_sync(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  char *dir = tu_tmpdir("builder_power");
  char *out = tu_path(dir, "out");
  size_t n = 2000;
  ref_doc *v = ref_make(&r, n, seed);
  ff_install();
  for (int torn = 0; torn < 2; torn++) {
    for (uint64_t nth = 1;; nth++) {
      ff_reset();
      ff_crash_at_sync(nth, torn, seed ^ nth);
      tern_builder *b;
      int rc = tern_builder_open(&b, out, NULL);
      for (size_t i = 0; rc == TERN_OK && i < n; i++) {
        tern_term t[8];
        size_t nt = et_doc_terms(&v[i].d, t);
        rc = tern_builder_add(b, v[i].key, v[i].klen, v[i].d.val, v[i].d.vlen, t, nt);
      }
      if (b && rc == TERN_OK)
        rc = tern_builder_finish(b, NULL);
      else if (b)
        (void)tern_builder_abort(b);
      int fired = ff_fired();
      ff_power_loss();
      ff_reset();
      if (rc == TERN_OK) {
        ET_OK(tern_builder_verify(out, NULL));
        tu_rmtree(out);
        if (!fired) break; /* every sync point passed */
        continue;
      }
      assert_false(exists(out));
      /* what the cut left is cleared by the next build (without faultfs,
       * which would keep links of the files it unlinks) */
      ff_uninstall();
      build(out, v, n, NULL, NULL);
      ET_OK(tern_builder_verify(out, NULL));
      tu_rmtree(out);
      ff_install();
    }
  }
  ff_uninstall();
  ref_free(v, n);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------------- verify */

static void flip(const char *path, long off) {
  size_t len;
  uint8_t *b = tu_read_file(path, &len);
  if (off < 0) off += (long)len;
  b[off] ^= 0x40;
  tu_write_file(path, b, len);
  free(b);
}

static void expect_bad(const char *out, int status, const char *named) {
  int rc = tern_builder_verify(out, NULL);
  if (rc != status) fprintf(stderr, "got %d (%s), want %d\n", rc, tern_errmsg(), status);
  assert_int_equal(rc, status);
  if (named && !strstr(tern_errmsg(), named)) {
    fprintf(stderr, "message \"%s\" does not name %s\n", tern_errmsg(), named);
    fail();
  }
}

static void test_verify_damage(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 7);
  char *dir = tu_tmpdir("builder_damage");
  char *out = tu_path(dir, "out");
  size_t n = 5000;
  ref_doc *v = ref_make(&r, n, 7);
  static const char *const ext[] = {".tim", ".tix", ".doc", ".flt", ".val"};
  char file[64];
  for (int e = 0; e < 5; e++) {
    for (int how = 0; how < 3; how++) { /* a flipped byte in the body, at the end; truncation */
      build(out, v, n, NULL, NULL);
      sprintf(file, "s000000000001%s", ext[e]);
      char *p = tu_path(out, file);
      size_t len;
      uint8_t *b = tu_read_file(p, &len);
      if (how == 0)
        flip(p, (long)(len > 100 ? len / 2 : TERN_FRAME_HEADER_SIZE));
      else if (how == 1)
        flip(p, -3);
      else
        tu_write_file(p, b, len - 1);
      free(b);
      expect_bad(out, TERN_ECORRUPT, file);
      free(p);
      tu_rmtree(out);
    }
  }
  build(out, v, n, NULL, NULL);
  /* a stray file */
  char *stray = tu_path(out, "notes.txt");
  tu_write_file(stray, "x", 1);
  expect_bad(out, TERN_ECORRUPT, "notes.txt");
  unlink(stray);
  /* a missing file */
  char *val = tu_path(out, "s000000000001.val");
  size_t vlen;
  uint8_t *vb = tu_read_file(val, &vlen);
  unlink(val);
  expect_bad(out, TERN_ECORRUPT, "s000000000001.val");
  /* a foreign file under a segment file's name */
  tu_write_file(val, "this is not a tern file at all, just text of some length....", 60);
  expect_bad(out, TERN_ECORRUPT, "s000000000001.val");
  /* another segment's file (its id differs) */
  char *other = tu_path(dir, "other");
  build(other, v + 1, n - 1, NULL, NULL);
  char *oval = tu_path(other, "s000000000001.val");
  size_t olen;
  uint8_t *ob = tu_read_file(oval, &olen);
  tu_write_file(val, ob, olen);
  expect_bad(out, TERN_ECORRUPT, "s000000000001");
  free(ob);
  tu_write_file(val, vb, vlen);
  ET_OK(tern_builder_verify(out, NULL));
  /* a newer format version: TERN_EVERSION */
  char *tix = tu_path(out, "s000000000001.tix");
  size_t tlen;
  uint8_t *tb = tu_read_file(tix, &tlen);
  tb[8] = 99;
  tu_write_file(tix, tb, tlen);
  expect_bad(out, TERN_EVERSION, "s000000000001.tix");
  /* not a directory; absent */
  expect_bad(tix, TERN_ECORRUPT, tix);
  char *absent = tu_path(dir, "absent");
  expect_bad(absent, -ENOENT, absent);
  free(absent);
  free(tb);
  free(tix);
  free(oval);
  free(other);
  free(vb);
  free(val);
  free(stray);
  ref_free(v, n);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------------- split */

static int key_cmp(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

typedef struct kv {
  uint8_t k[16];
  size_t len;
} kv;

static int kv_cmp(const void *a, const void *b) {
  const kv *x = a, *y = b;
  return key_cmp(x->k, x->len, y->k, y->len);
}

/* Checks the parts the boundaries make of the sorted live keys. */
static void check_parts(const kv *live, size_t n, const tern_slice *bounds, size_t parts) {
  size_t start = 0;
  double want = (double)n / (double)parts;
  for (size_t p = 0; p < parts; p++) {
    size_t end = n;
    if (p + 1 < parts) {
      assert_true(bounds[p].len > 0);
      if (p)
        assert_true(key_cmp(bounds[p - 1].data, bounds[p - 1].len, bounds[p].data, bounds[p].len) <
                    0);
      /* first live key >= the boundary */
      size_t lo = start, hi = n;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (key_cmp(live[mid].k, live[mid].len, bounds[p].data, bounds[p].len) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      end = lo;
    }
    double got = (double)(end - start);
    if (got < 0.9 * want || got > 1.1 * want) {
      fprintf(stderr, "part %zu of %zu: %.0f keys, want %.0f +-10%%\n", p, parts, got, want);
      fail();
    }
    start = end;
  }
}

/* Keys: random 8 bytes, or skewed (most keys under a few prefixes, with
 * lengths 3 to 16).  Written in several commits and flushes so that the
 * index holds several segments, some deletions and a buffer. */
static void split_case(int skewed, int segments, uint64_t seed) {
  tu_rng r;
  tu_rng_init(&r, seed);
  char *dir = tu_tmpdir("split");
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 64u << 20; /* flushes only when asked */
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  size_t total = 300000;
  kv *keys = calloc(total, sizeof *keys);
  uint8_t *dead = calloc(total, 1);
  for (size_t i = 0; i < total; i++) {
    kv *k = &keys[i];
    if (skewed) {
      uint64_t p = tu_below(&r, 100);
      k->len = 3 + tu_below(&r, 14);
      tu_fill(&r, k->k, k->len);
      k->k[0] = p < 60 ? 'a' : p < 90 ? 'b' : (uint8_t)tu_below(&r, 256);
      if (p < 40) k->k[1] = 'x';
    } else {
      k->len = 8;
      tu_fill(&r, k->k, 8);
    }
  }
  size_t per = total / (size_t)segments;
  for (int s = 0; s < segments; s++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    for (size_t i = (size_t)s * per; i < (size_t)(s + 1) * per; i++)
      ET_OK(tern_put(t, keys[i].k, keys[i].len, "v", 1, NULL, 0));
    ET_OK(tern_commit(t));
    if (s + 1 < segments) ET_OK(tern_flush(idx)); /* the last stays in the buffer */
  }
  /* delete a few percent, spread */
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (size_t i = 0; i < total; i += 1 + tu_below(&r, 40)) {
    int rc = tern_delete(t, keys[i].k, keys[i].len);
    assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
    dead[i] = 1;
  }
  ET_OK(tern_commit(t));
  /* the live keys, sorted and unique: the reference */
  kv *live = malloc(total * sizeof *live);
  size_t n = 0;
  for (size_t i = 0; i < total; i++)
    if (!dead[i]) live[n++] = keys[i];
  qsort(live, n, sizeof *live, kv_cmp);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || kv_cmp(&live[u - 1], &live[i])) live[u++] = live[i];
  n = u;
  /* deleted copies: a key deleted after being put twice is dead */
  for (size_t i = 0; i < total; i++)
    if (dead[i]) {
      kv *hit = bsearch(&keys[i], live, n, sizeof *live, kv_cmp);
      if (hit) {
        memmove(hit, hit + 1, (size_t)(live + n - hit - 1) * sizeof *live);
        n--;
      }
    }
  tern_snapshot *snap;
  ET_OK(tern_snapshot_open(&snap, idx));
  uint64_t count;
  ET_OK(tern_snapshot_count(snap, &count));
  assert_int_equal(count, n);
  static const size_t parts[] = {1, 2, 3, 7, 16};
  for (size_t pi = 0; pi < sizeof parts / sizeof *parts; pi++) {
    tern_slice b[16];
    ET_OK(tern_split_keys(snap, parts[pi], b));
    check_parts(live, n, b, parts[pi]);
    for (size_t i = 0; i + 1 < parts[pi]; i++)
      free((void *)b[i].data);
  }
  assert_int_equal(tern_split_keys(snap, 0, NULL), TERN_EINVAL);
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_close(idx));
  free(live);
  free(dead);
  free(keys);
  tu_rmtree(dir);
  free(dir);
}

static void test_split_random(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  split_case(0, 1, seed);
  split_case(0, 5, seed + 1);
}

static void test_split_skewed(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  split_case(1, 1, seed);
  split_case(1, 4, seed + 1);
}

static void test_split_few_keys(void **state) {
  (void)state;
  char *dir = tu_tmpdir("split_few");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_snapshot *snap;
  tern_slice b[4];
  ET_OK(tern_snapshot_open(&snap, idx));
  ET_OK(tern_split_keys(snap, 5, b)); /* empty index: no boundary */
  for (int i = 0; i < 4; i++)
    assert_int_equal(b[i].len, 0);
  ET_OK(tern_snapshot_close(snap));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, "a", 1, "", 0, NULL, 0));
  ET_OK(tern_put(t, "b", 1, "", 0, NULL, 0));
  ET_OK(tern_commit(t));
  ET_OK(tern_snapshot_open(&snap, idx));
  ET_OK(tern_split_keys(snap, 5, b));
  assert_int_equal(b[0].len, 1);
  assert_memory_equal(b[0].data, "b", 1);
  for (int i = 1; i < 4; i++)
    assert_int_equal(b[i].len, 0);
  free((void *)b[0].data);
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* ---------------------------------------------------------------- export */

/* An index of the reference's documents over two segments and the buffer,
 * some deleted and some rewritten; every range exported is compared with
 * the reference's documents of the range. */
static void test_export_ranges(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  char *dir = tu_tmpdir("export");
  char *idxdir = tu_path(dir, "idx");
  size_t n = 12000;
  ref_doc *v = ref_make(&r, n, seed);
  uint8_t *live = malloc(n);
  tern_index *idx;
  ET_OK(tern_open(&idx, idxdir, TERN_CREATE | TERN_FOREGROUND, NULL));
  /* every doc once, in a random order, over 3 commits: 2 flushed */
  for (int round = 0; round < 3; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, round < 2 ? TERN_TXN_BULK : 0));
    for (size_t i = (size_t)round; i < n; i += 3) {
      tern_term tt[8];
      size_t nt = et_doc_terms(&v[i].d, tt);
      ET_OK(tern_put(t, v[i].key, v[i].klen, v[i].d.val, v[i].d.vlen, tt, nt));
      live[i] = 1;
    }
    ET_OK(tern_commit(t));
  }
  /* rewrite some (a newer copy shadows the segment's) and delete some */
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (size_t i = 0; i < n; i += 1 + tu_below(&r, 20)) {
    if (tu_below(&r, 2)) {
      ET_OK(tern_delete(t, v[i].key, v[i].klen));
      live[i] = 0;
    } else {
      et_doc_random(&r, &v[i].d);
      tern_term tt[8];
      size_t nt = et_doc_terms(&v[i].d, tt);
      ET_OK(tern_put(t, v[i].key, v[i].klen, v[i].d.val, v[i].d.vlen, tt, nt));
    }
  }
  ET_OK(tern_commit(t));
  tern_snapshot *snap;
  ET_OK(tern_snapshot_open(&snap, idx));
  ref_doc *want = calloc(n, sizeof *want);
  for (int c = 0; c < 6; c++) {
    size_t a = c == 0 ? 0 : (size_t)tu_below(&r, n), z = c == 0 ? n : (size_t)tu_below(&r, n + 1);
    if (a > z) {
      size_t x = a;
      a = z;
      z = x;
    }
    tern_slice from = {v[a].key, v[a].klen}, to = {z < n ? v[z].key : NULL, z < n ? v[z].klen : 0};
    char name[32];
    sprintf(name, "out%d", c);
    char *out = tu_path(dir, name);
    tern_builder *b;
    ET_OK(tern_builder_open(&b, out, NULL));
    ET_OK(tern_export(snap, c == 0 ? NULL : &from, &to, b));
    tern_build_info info;
    ET_OK(tern_builder_finish(b, &info));
    size_t nw = 0;
    for (size_t i = a; i < z; i++)
      if (live[i]) want[nw++] = v[i]; /* shallow: the docs stay v's */
    assert_int_equal(info.documents, nw);
    if (nw) {
      ET_OK(tern_builder_verify(out, NULL));
      check_segment(out, info.name, want, nw);
    }
    free(out);
  }
  free(want);
  /* an empty range, and a builder whose keys are already above the range */
  char *out = tu_path(dir, "late");
  tern_builder *b;
  ET_OK(tern_builder_open(&b, out, NULL));
  ET_OK(tern_builder_add(b, "\xff\xff\xff\xff\xff\xff", 6, "", 0, NULL, 0));
  assert_int_equal(tern_export(snap, NULL, NULL, b), TERN_EINVAL);
  ET_OK(tern_builder_abort(b));
  free(out);
  ET_OK(tern_snapshot_close(snap));
  ET_OK(tern_close(idx));
  free(live);
  ref_free(v, n);
  free(idxdir);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_against_reference),
      cmocka_unit_test(test_keys_out_of_order),
      cmocka_unit_test(test_out_exists_and_abort),
      cmocka_unit_test(test_faults_every_call),
      cmocka_unit_test(test_power_cut_at_every_sync),
      cmocka_unit_test(test_verify_damage),
      cmocka_unit_test(test_split_random),
      cmocka_unit_test(test_split_skewed),
      cmocka_unit_test(test_split_few_keys),
      cmocka_unit_test(test_export_ranges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

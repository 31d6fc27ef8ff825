/* SPDX-License-Identifier: MIT */
/*
 * test_conventions.c — the header's conventions (tern.h, CONVENTIONS), on
 * every call it declares, checked mechanically:
 *  - every call clears tern_errmsg() (after a success or TERN_NOTFOUND it
 *    is ""), except tern_version, tern_strerror and tern_errmsg, which keep
 *    it;
 *  - every failure leaves a message;
 *  - every out-handle is NULL after a failure (it was set to garbage first);
 *  - tern_snapshot_close is TERN_EBUSY while any handle opened on the
 *    snapshot is open (postings, cursor, terms, deleted docs);
 *  - a callback's non-zero return comes back as TERN_ESTOPPED, never as its
 *    own value, and tern_postings_each_by_key stopped early resumes.
 * Each call has a CALL(name, ...) row: tests/tools/header_errors.sh fails
 * when a call of tern.h has none (and when tern.h lists no errors for it).
 */
#include "tests/engine/enginetest.h"

/* Leaves a message behind: a failed open of a directory that is not there. */
static void leave_message(void) {
  tern_index *none;
  assert_int_equal(tern_open(&none, "/nonexistent/tern-conventions", 0, NULL), TERN_ENOTINDEX);
  assert_true(tern_errmsg()[0] != '\0');
}

/* A call returning a status: `want`, and the message cleared. */
#define CALL(fn, want, ...)                                                                        \
  do {                                                                                             \
    leave_message();                                                                               \
    int rc_ = fn(__VA_ARGS__);                                                                     \
    if (rc_ != (want)) fprintf(stderr, "%s: %d (%s)\n", #fn, rc_, tern_errmsg());                  \
    assert_int_equal(rc_, (want));                                                                 \
    if (tern_errmsg()[0]) fprintf(stderr, "%s left \"%s\"\n", #fn, tern_errmsg());                 \
    assert_string_equal(tern_errmsg(), "");                                                        \
  } while (0)

/* A call returning a count: the message cleared. */
#define CALL_COUNT(fn, expr)                                                                       \
  do {                                                                                             \
    leave_message();                                                                               \
    (void)(expr);                                                                                  \
    assert_string_equal(tern_errmsg(), "");                                                        \
  } while (0)

/* A call that reads no per-call state: the message kept. */
#define CALL_KEEPS(fn, expr)                                                                       \
  do {                                                                                             \
    leave_message();                                                                               \
    const char *r_ = (expr);                                                                       \
    assert_non_null(r_);                                                                           \
    assert_true(tern_errmsg()[0] != '\0');                                                         \
  } while (0)

/* A failing call: `want`, a message, and the out-handle NULL. */
#define FAILS_OUT(want, outp, expr)                                                                \
  do {                                                                                             \
    tern_clear_message();                                                                          \
    *(outp) = (void *)&garbage;                                                                    \
    int rc_ = (expr);                                                                              \
    assert_int_equal(rc_, (want));                                                                 \
    assert_true(tern_errmsg()[0] != '\0');                                                         \
    assert_null(*(outp));                                                                          \
  } while (0)

/* A failing call without an out-handle: `want` and a message. */
#define FAILS(want, expr)                                                                          \
  do {                                                                                             \
    tern_clear_message();                                                                          \
    int rc_ = (expr);                                                                              \
    if (rc_ != (want)) fprintf(stderr, "%s: %d\n", #expr, rc_);                                    \
    assert_int_equal(rc_, (want));                                                                 \
    assert_true(tern_errmsg()[0] != '\0');                                                         \
  } while (0)

static int garbage;

/* A successful call empties the message: one way to start from "". */
static void tern_clear_message(void) {
  tern_options o;
  tern_options_init(&o);
}

enum { NDOCS = 300 };

static size_t key_of(uint32_t i, char *buf) { return (size_t)sprintf(buf, "k%05u", i); }

/* NDOCS documents with term color:red (every one) and color:blue (odd
 * ones): a segment with deletions, then a few more in the buffer. */
static tern_index *world(const char *dir) {
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t i = 0; i < NDOCS; i++) {
    char k[16];
    tern_term terms[2] = {{"color", "red", 3}, {"color", "blue", 4}};
    ET_OK(tern_put(t, k, key_of(i, k), k, 3, terms, 1 + (i & 1)));
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_flush(idx));
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t i = 0; i < NDOCS; i += 10) {
    char k[16];
    ET_OK(tern_delete(t, k, key_of(i, k)));
  }
  for (uint32_t i = NDOCS; i < NDOCS + 5; i++) {
    char k[16];
    tern_term term = {"color", "red", 3};
    ET_OK(tern_put(t, k, key_of(i, k), "v", 1, &term, 1));
  }
  ET_OK(tern_commit(t));
  return idx;
}

static int count_batch(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)i, (void)val, (void)vlen;
  if (status == TERN_OK) ++*(int *)payload;
  return 0;
}

static int count_doc(void *payload, tern_slice key, tern_slice val) {
  (void)key, (void)val;
  ++*(int *)payload;
  return 0;
}

static int count_terms_doc(void *payload, tern_slice key, tern_slice val, const tern_term *terms,
                           size_t nterms) {
  (void)key, (void)val, (void)terms, (void)nterms;
  ++*(int *)payload;
  return 0;
}

/* Every call of tern.h, in the header's order: success clears, failure
 * tells and NULLs its out-handle. */
static void test_every_call(void **state) {
  (void)state;
  char *dir = tu_tmpdir("conventions");
  tern_index *idx;
  tern_txn *t;
  tern_snapshot *s;
  tern_postings *p;
  tern_cursor *c;
  tern_terms *te;
  tern_deleted *d;
  tern_stats *st;
  tern_options o;
  char buf[16];
  size_t n;
  uint64_t u;
  tern_slice k, v;
  tern_term red = {"color", "red", 3}, bad = {"", "x", 1};

  CALL_KEEPS(tern_version, tern_version());
  CALL_KEEPS(tern_strerror, tern_strerror(TERN_ECORRUPT));
  CALL_KEEPS(tern_errmsg, tern_errmsg());
  CALL(tern_options_init, TERN_OK, &o);
  FAILS(TERN_EINVAL, tern_options_init(NULL));

  FAILS_OUT(TERN_ENOTINDEX, &idx, tern_open(&idx, "/nonexistent/x", 0, NULL));
  FAILS_OUT(TERN_EINVAL, &idx, tern_open(&idx, dir, TERN_CREATE | TERN_RDONLY, NULL));
  tern_close(world(dir));
  CALL(tern_open, TERN_OK, &idx, dir, 0, NULL);
  CALL(tern_get_options, TERN_OK, idx, &o);
  FAILS(TERN_EINVAL, tern_get_options(NULL, &o));

  CALL(tern_txn_begin, TERN_OK, &t, idx, 0);
  tern_txn *t2;
  FAILS_OUT(TERN_EBUSY, &t2, tern_txn_begin(&t2, idx, 0));
  FAILS_OUT(TERN_EINVAL, &t2, tern_txn_begin(&t2, NULL, 0));
  CALL(tern_txn_set_progress, TERN_OK, t, NULL, NULL);
  FAILS(TERN_EINVAL, tern_txn_set_progress(NULL, NULL, NULL));
  CALL(tern_txn_set_memory, TERN_OK, t, 0);
  FAILS(TERN_EINVAL, tern_txn_set_memory(NULL, 0));
  FAILS(TERN_EINVAL, tern_txn_set_memory(t, 1 << 20)); /* not a bulk transaction */
  CALL(tern_put, TERN_OK, t, "new", 3, "v", 1, &red, 1);
  FAILS(TERN_EINVAL, tern_put(t, "", 0, "v", 1, NULL, 0));
  FAILS(TERN_EINVAL, tern_put(t, "x", 1, "v", 1, &bad, 1));
  CALL(tern_delete, TERN_NOTFOUND, t, "absent", 6);
  CALL(tern_delete, TERN_OK, t, "new", 3);
  FAILS(TERN_EINVAL, tern_delete(t, NULL, 1));
  CALL(tern_txn_get, TERN_OK, t, "k00001", 6, buf, sizeof buf, &n);
  CALL(tern_txn_get, TERN_NOTFOUND, t, "new", 3, buf, sizeof buf, &n); /* deleted above */
  FAILS(TERN_EINVAL, tern_txn_get(t, NULL, 0, buf, sizeof buf, &n));
  CALL(tern_put_flags, TERN_OK, t, TERN_NOOVERWRITE, "new2", 4, "v", 1, NULL, 0);
  FAILS(TERN_EEXIST, tern_put_flags(t, TERN_NOOVERWRITE, "k00001", 6, "v", 1, NULL, 0));
  FAILS(TERN_EEXIST, tern_put_flags(t, TERN_NOOVERWRITE, "new2", 4, "v", 1, NULL, 0));
  CALL(tern_commit, TERN_OK, t);
  FAILS(TERN_EINVAL, tern_commit(NULL));
  CALL(tern_txn_begin, TERN_OK, &t, idx, 0);
  CALL(tern_abort, TERN_OK, t);
  CALL(tern_abort, TERN_OK, NULL);

  CALL(tern_snapshot_open, TERN_OK, &s, idx);
  tern_snapshot *s2;
  FAILS_OUT(TERN_EINVAL, &s2, tern_snapshot_open(&s2, NULL));
  CALL(tern_get, TERN_OK, s, "k00001", 6, buf, sizeof buf, &n);
  CALL(tern_get, TERN_NOTFOUND, s, "k00000", 6, buf, sizeof buf, &n);
  FAILS(TERN_EINVAL, tern_get(s, "", 0, buf, sizeof buf, &n));
  tern_slice keys[2] = {{"k00001", 6}, {"nope", 4}};
  int found = 0;
  CALL(tern_get_batch, TERN_OK, s, keys, 2, count_batch, &found);
  assert_int_equal(found, 1);
  FAILS(TERN_EINVAL, tern_get_batch(s, keys, 2, NULL, NULL));

  CALL(tern_postings_open, TERN_OK, &p, s, &red, 1);
  tern_postings *p2;
  FAILS_OUT(TERN_EINVAL, &p2, tern_postings_open(&p2, s, &bad, 1));
  FAILS_OUT(TERN_EINVAL, &p2, tern_postings_open(&p2, NULL, &red, 1));
  CALL_COUNT(tern_postings_cost, tern_postings_cost(p));
  CALL(tern_postings_next, TERN_OK, p, &u);
  CALL(tern_postings_doc, TERN_OK, p, &k, &v);
  CALL(tern_postings_advance, TERN_OK, p, u + 2, &u);
  FAILS(TERN_EINVAL, tern_postings_next(NULL, &u));
  FAILS(TERN_EINVAL, tern_postings_advance(p, 0, NULL));
  int hits = 0;
  CALL(tern_postings_each_by_key, TERN_OK, p, 1, count_doc, &hits);
  assert_true(hits > 0);
  FAILS(TERN_EINVAL, tern_postings_each_by_key(p, 0, NULL, NULL));
  FAILS(TERN_EINVAL, tern_postings_doc(p, &k, &v)); /* drained: no current document */
  CALL(tern_postings_close, TERN_OK, p);
  CALL(tern_postings_close, TERN_OK, NULL);

  CALL(tern_cursor_open, TERN_OK, &c, s, NULL);
  tern_cursor *c2;
  tern_bounds longb = {{"x", TERN_KEY_MAX + 1}, {NULL, 0}, {NULL, 0}};
  FAILS_OUT(TERN_EINVAL, &c2, tern_cursor_open(&c2, s, &longb));
  FAILS_OUT(TERN_EINVAL, &c2, tern_cursor_open(&c2, NULL, NULL));
  FAILS(TERN_EINVAL, tern_cursor_key(c, &k)); /* unpositioned */
  CALL(tern_cursor_first, TERN_OK, c);
  CALL(tern_cursor_key, TERN_OK, c, &k);
  CALL(tern_cursor_value, TERN_OK, c, &v);
  CALL(tern_cursor_next, TERN_OK, c);
  CALL(tern_cursor_prev, TERN_OK, c);
  CALL(tern_cursor_last, TERN_OK, c);
  CALL(tern_cursor_next, TERN_NOTFOUND, c);
  CALL(tern_cursor_seek, TERN_OK, c, "k00002", 6);
  CALL(tern_cursor_seek, TERN_NOTFOUND, c, "z", 1);
  CALL(tern_cursor_seek_for_prev, TERN_OK, c, "k00002", 6);
  CALL(tern_cursor_seek_for_prev, TERN_NOTFOUND, c, "a", 1);
  FAILS(TERN_EINVAL, tern_cursor_seek(c, NULL, 3));
  FAILS(TERN_EINVAL, tern_cursor_first(NULL));
  FAILS(TERN_EINVAL, tern_cursor_value(c, &v)); /* unpositioned */
  CALL(tern_cursor_close, TERN_OK, c);
  CALL(tern_cursor_close, TERN_OK, NULL);

  CALL(tern_terms_open, TERN_OK, &te, s, "color");
  tern_terms *te2;
  FAILS_OUT(TERN_EINVAL, &te2, tern_terms_open(&te2, s, ""));
  FAILS_OUT(TERN_EINVAL, &te2, tern_terms_open(&te2, NULL, "color"));
  FAILS(TERN_EINVAL, tern_terms_term(te, &k)); /* unpositioned */
  CALL(tern_terms_next, TERN_OK, te);
  CALL(tern_terms_term, TERN_OK, te, &k);
  CALL(tern_terms_docfreq, TERN_OK, te, &u);
  CALL(tern_terms_postings, TERN_OK, te, &p);
  tern_postings_close(p);
  int exact;
  CALL(tern_terms_seek_ceil, TERN_OK, te, "red", 3, &exact);
  assert_int_equal(exact, 1);
  CALL(tern_terms_seek_ceil, TERN_NOTFOUND, te, "zzz", 3, &exact);
  FAILS_OUT(TERN_EINVAL, &p, tern_terms_postings(te, &p)); /* unpositioned */
  FAILS(TERN_EINVAL, tern_terms_docfreq(te, &u));
  CALL(tern_terms_close, TERN_OK, te);
  CALL(tern_terms_close, TERN_OK, NULL);

  CALL(tern_snapshot_count, TERN_OK, s, &u);
  assert_int_equal(u, NDOCS - NDOCS / 10 + 5 + 1); /* + new2 */
  FAILS(TERN_EINVAL, tern_snapshot_count(s, NULL));
  CALL_COUNT(tern_snapshot_nsegments, tern_snapshot_nsegments(s));
  assert_int_equal(tern_snapshot_nsegments(s), 1);
  CALL(tern_deleted_open, TERN_OK, &d, s, 0);
  tern_deleted *d2;
  FAILS_OUT(TERN_EINVAL, &d2, tern_deleted_open(&d2, s, 1));
  CALL_COUNT(tern_deleted_cost, tern_deleted_cost(d));
  assert_int_equal(tern_deleted_cost(d), NDOCS / 10);
  CALL(tern_deleted_next, TERN_OK, d, &u);
  assert_int_equal(u, 0);
  FAILS(TERN_EINVAL, tern_deleted_next(d, NULL));
  CALL(tern_deleted_close, TERN_OK, d);
  CALL(tern_deleted_close, TERN_OK, NULL);

  hits = 0;
  CALL(tern_docs_each, TERN_OK, s, NULL, count_terms_doc, &hits);
  assert_int_equal(hits, NDOCS - NDOCS / 10 + 5 + 1);
  FAILS(TERN_EINVAL, tern_docs_each(s, NULL, NULL, NULL));
  CALL(tern_doc_terms, TERN_OK, s, "k00001", 6, count_terms_doc, &hits);
  CALL(tern_doc_terms, TERN_NOTFOUND, s, "k00000", 6, count_terms_doc, &hits);
  FAILS(TERN_EINVAL, tern_doc_terms(s, "", 0, count_terms_doc, &hits));
  char *dest = tu_path(dir, "inside");
  FAILS(TERN_EINVAL, tern_backup(s, dest)); /* inside the index */
  free(dest);
  dest = malloc(strlen(dir) + 8);
  assert_non_null(dest);
  sprintf(dest, "%s.backup", dir);
  CALL(tern_backup, TERN_OK, s, dest);
  FAILS(TERN_EINVAL, tern_backup(s, dest)); /* not empty */
  tu_rmtree(dest);
  free(dest);

  FAILS(TERN_EBUSY, tern_close(idx)); /* a snapshot is open */
  CALL(tern_snapshot_close, TERN_OK, s);
  CALL(tern_snapshot_close, TERN_OK, NULL);

  CALL(tern_flush, TERN_OK, idx);
  FAILS(TERN_EINVAL, tern_flush(NULL));
  CALL(tern_compact, TERN_OK, idx);
  CALL(tern_verify, TERN_OK, idx);
  FAILS(TERN_EINVAL, tern_verify(NULL));
  CALL(tern_stats_get, TERN_OK, &st, idx);
  tern_stats *st2;
  FAILS_OUT(TERN_EINVAL, &st2, tern_stats_get(&st2, NULL));
  CALL(tern_stats_free, TERN_OK, st);
  CALL(tern_stats_free, TERN_OK, NULL);
  CALL(tern_close, TERN_OK, idx);
  CALL(tern_close, TERN_OK, NULL);
  tu_rmtree(dir);
  free(dir);
}

/* tern_snapshot_close refuses while any handle opened on the snapshot is
 * open, whichever kind, and succeeds once it is closed. */
static void test_snapshot_close_busy(void **state) {
  (void)state;
  char *dir = tu_tmpdir("conv-busy");
  tern_index *idx = world(dir);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  tern_term red = {"color", "red", 3};
  for (int kind = 0; kind < 4; kind++) {
    void *h = NULL;
    switch (kind) {
    case 0: ET_OK(tern_postings_open((tern_postings **)&h, s, &red, 1)); break;
    case 1: ET_OK(tern_cursor_open((tern_cursor **)&h, s, NULL)); break;
    case 2: ET_OK(tern_terms_open((tern_terms **)&h, s, "color")); break;
    default: ET_OK(tern_deleted_open((tern_deleted **)&h, s, 0)); break;
    }
    assert_int_equal(tern_snapshot_close(s), TERN_EBUSY);
    assert_non_null(strstr(tern_errmsg(), "still open"));
    switch (kind) {
    case 0: tern_postings_close(h); break;
    case 1: {
      /* the cursor still reads its snapshot after the refused close */
      ET_OK(tern_cursor_first(h));
      tern_cursor_close(h);
      break;
    }
    case 2: tern_terms_close(h); break;
    default: tern_deleted_close(h); break;
    }
  }
  /* A terms enumeration's postings keep it busy too. */
  tern_terms *te;
  tern_postings *p;
  ET_OK(tern_terms_open(&te, s, "color"));
  ET_OK(tern_terms_next(te));
  ET_OK(tern_terms_postings(te, &p));
  ET_OK(tern_terms_close(te));
  assert_int_equal(tern_snapshot_close(s), TERN_EBUSY);
  ET_OK(tern_postings_close(p));
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static int stop_batch(void *payload, size_t i, int status, const void *val, size_t vlen) {
  (void)status, (void)val, (void)vlen;
  return i == *(size_t *)payload ? TERN_NOTFOUND : 0; /* a value equal to one of tern's */
}

/* A callback's value never comes back as the status: TERN_ESTOPPED. */
static void test_callback_stop_is_estopped(void **state) {
  (void)state;
  char *dir = tu_tmpdir("conv-stop");
  tern_index *idx = world(dir);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  tern_slice keys[3] = {{"k00001", 6}, {"nope", 4}, {"k00003", 6}};
  for (size_t at = 0; at < 3; at++) {
    assert_int_equal(tern_get_batch(s, keys, 3, stop_batch, &at), TERN_ESTOPPED);
    assert_non_null(strstr(tern_errmsg(), "callback"));
  }
  assert_string_equal(tern_strerror(TERN_ESTOPPED), "stopped by the callback");
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

typedef struct walk {
  char (*keys)[16];
  size_t n, stop_every, since;
} walk;

static int record_doc(void *payload, tern_slice key, tern_slice val) {
  (void)val;
  walk *w = payload;
  assert_true(key.len < 16);
  memcpy(w->keys[w->n], key.data, key.len);
  w->keys[w->n][key.len] = '\0';
  w->n++;
  return ++w->since % w->stop_every == 0 ? 1 : 0;
}

/* tern_postings_each_by_key stopped every `stop_every` documents (random,
 * printed seed) and called again visits each document once, in key order:
 * the same list as one walk never stopped, and as the reference. */
static void test_each_by_key_resumes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("conv-resume");
  tern_index *idx = world(dir);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  tern_term red = {"color", "red", 3};
  /* reference: the live keys, in order (k%05u sorts as numbers) */
  char(*want)[16] = calloc(NDOCS + 5, sizeof *want);
  size_t nwant = 0;
  for (uint32_t i = 0; i < NDOCS + 5; i++)
    if (i >= NDOCS || i % 10) key_of(i, want[nwant++]);
  tu_rng r;
  tu_rng_init(&r, 0xc0u);
  for (int round = 0; round < 8; round++) {
    walk w = {calloc(NDOCS + 5, 16), 0, 1 + tu_below(&r, 40), 0};
    tern_postings *p;
    ET_OK(tern_postings_open(&p, s, &red, 1));
    int rc, calls = 0;
    while ((rc = tern_postings_each_by_key(p, calls & 1, record_doc, &w)) == TERN_ESTOPPED)
      calls++;
    ET_OK(rc);
    assert_int_equal(w.n, nwant);
    for (size_t i = 0; i < nwant; i++)
      assert_string_equal(w.keys[i], want[i]);
    size_t before = w.n; /* the walk ended: a further call visits nothing */
    ET_OK(tern_postings_each_by_key(p, 0, record_doc, &w));
    assert_int_equal(w.n, before);
    uint64_t doc;
    ET_OK(tern_postings_next(p, &doc));
    assert_true(doc == TERN_NO_MORE_DOCS);
    ET_OK(tern_postings_close(p));
    free(w.keys);
  }
  free(want);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* The bulk-load and sequence calls: built segments, split, export,
 * ingest, deleted ranges, commit sequence numbers. */
static void test_bulk_calls(void **state) {
  (void)state;
  char *dir = tu_tmpdir("conventions-bulk");
  tern_close(world(dir));
  tern_index *idx;
  CALL(tern_open, TERN_OK, &idx, dir, 0, NULL);
  tern_snapshot *s;
  CALL(tern_snapshot_open, TERN_OK, &s, idx);
  uint64_t seq, seq2;
  CALL(tern_snapshot_seq, TERN_OK, s, &seq);
  FAILS(TERN_EINVAL, tern_snapshot_seq(NULL, &seq));
  tern_slice keys[3];
  CALL(tern_split_keys, TERN_OK, s, 4, keys);
  for (int i = 0; i < 3; i++) free((void *)keys[i].data);
  FAILS(TERN_EINVAL, tern_split_keys(NULL, 4, keys));

  char *seg = malloc(strlen(dir) + 16), *out = malloc(strlen(dir) + 16);
  assert_true(seg && out);
  sprintf(seg, "%s.seg", dir);
  sprintf(out, "%s.export", dir);
  tern_builder *b;
  FAILS_OUT(TERN_EINVAL, &b, tern_builder_open(&b, NULL, NULL));
  CALL(tern_builder_open, TERN_OK, &b, seg, NULL);
  CALL(tern_builder_add, TERN_OK, b, "zz1", 3, "v", 1, NULL, 0);
  FAILS(TERN_EINVAL, tern_builder_add(b, "zz0", 3, "v", 1, NULL, 0)); /* out of order */
  CALL(tern_builder_finish, TERN_OK, b, NULL);
  CALL(tern_builder_verify, TERN_OK, seg, NULL);
  FAILS(TERN_EINVAL, tern_builder_verify(NULL, NULL));
  CALL(tern_builder_open, TERN_OK, &b, out, NULL);
  CALL(tern_export, TERN_OK, s, NULL, NULL, b);
  FAILS(TERN_EINVAL, tern_export(NULL, NULL, NULL, b));
  CALL(tern_builder_abort, TERN_OK, b);
  CALL(tern_builder_abort, TERN_OK, NULL);
  CALL(tern_snapshot_close, TERN_OK, s);

  const char *paths[1] = {seg};
  CALL(tern_ingest, TERN_OK, idx, paths, 1, 0);
  FAILS(TERN_EINVAL, tern_ingest(idx, NULL, 1, 0));
  tern_txn *t;
  CALL(tern_txn_begin, TERN_OK, &t, idx, 0);
  tern_slice from = {"k00001", 6}, to = {"k00002", 6};
  CALL(tern_delete_range, TERN_OK, t, &from, &to);
  FAILS(TERN_EINVAL, tern_delete_range(NULL, &from, &to));
  CALL(tern_commit_seq, TERN_OK, t, &seq2);
  assert_true(seq2 > seq);
  FAILS(TERN_EINVAL, tern_commit_seq(NULL, &seq2));
  CALL(tern_close, TERN_OK, idx);
  tu_rmtree(seg);
  tu_rmtree(dir);
  free(seg);
  free(out);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_call),
      cmocka_unit_test(test_bulk_calls),
      cmocka_unit_test(test_snapshot_close_busy),
      cmocka_unit_test(test_callback_stop_is_estopped),
      cmocka_unit_test(test_each_by_key_resumes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_errmsg_files.c — every error message names its file, mechanically:
 * for each call of tern.h that reads files (opening, snapshots, every read
 * path, writes that resolve keys, verify, backup, compact, export, split,
 * builder verify, ingest) and each file it may read (a segment's .tim,
 * .tix, .doc, .flt, .val; catalog.mdb), the file is damaged (a byte
 * flipped in every page), removed, or made to fail its reads with EIO
 * (faultfs, aimed at that file), and the call's status must be the true
 * cause (TERN_ECORRUPT for damage; -ENOENT or TERN_ECORRUPT for a file
 * missing; -EIO) and tern_errmsg() must contain the file's name.  A call
 * that does not read the file in that way succeeds and is not counted;
 * every call must have failed somewhere (so the test can fail).
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include "codec/status.h"
#include "tern.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define NDOCS 400u
#define SEG1 "s000000000001"

enum mode { DAMAGE, MISSING, EIO_READ, NMODES };
static const char *const mode_name[NMODES] = {"damaged", "missing", "EIO"};

static size_t key_of(unsigned i, char *out) { return (size_t)sprintf(out, "k%05u", i); }

/* Two bulk segments (even keys first, odd keys second): values over
 * inline_value_max for every third key (.val), postings of field "p" out
 * of line (threshold 0: .doc); and a buffered document. */
static void build_base(const char *dir) {
  tern_options o;
  tern_options_init(&o);
  tern_field_option fo = {"p", 0};
  o.fields = &fo;
  o.nfields = 1;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  for (unsigned seg = 0; seg < 2; seg++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
    for (unsigned i = seg; i < NDOCS; i += 2) {
      char k[16], v[400], g[8];
      size_t kl = key_of(i, k);
      size_t vl = i % 3 ? 10 : 300;
      memset(v, 'a' + (int)(i % 26), vl);
      snprintf(g, sizeof g, "g%u", i % 5);
      tern_term terms[2] = {{"p", g, strlen(g)}, {"q", k, kl}};
      ET_OK(tern_put(t, k, kl, v, vl, terms, 2));
    }
    ET_OK(tern_commit(t));
  }
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, "zbuffered", 9, "b", 1, NULL, 0));
  ET_OK(tern_commit(t));
  ET_OK(tern_close(idx));
}

/* Flips a byte in every 4 KiB page of the file, in place (open mappings see it). */
static void damage(const char *path) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  for (off_t off = 0; off < st.st_size; off += 4096) {
    off_t at = off + 1000 < st.st_size ? off + 1000 : st.st_size - 1;
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
  }
  close(fd);
}

typedef struct ctx {
  const char *root, *dir;
  tern_index *idx;
  tern_snapshot *snap;
} ctx;

/* The message of the first failure of a round, kept before the handles
 * around it are closed (tern.h: closing clears it). */
static char g_msg[1024];
static int keep(int rc) {
  if (rc != TERN_OK && rc != TERN_NOTFOUND && !g_msg[0]) snprintf(g_msg, sizeof g_msg, "%s", tern_errmsg());
  return rc;
}

static int cb_batch(void *p, size_t i, int st, const void *v, size_t n) {
  (void)p, (void)i, (void)st, (void)v, (void)n;
  return 0;
}
static int cb_doc(void *p, tern_slice k, tern_slice v) {
  (void)p, (void)k, (void)v;
  return 0;
}
static int cb_terms(void *p, tern_slice k, tern_slice v, const tern_term *t, size_t n) {
  (void)p, (void)k, (void)v, (void)t, (void)n;
  return 0;
}

static int c_get(ctx *c) {
  for (unsigned i = 0; i < NDOCS; i++) {
    char k[16], buf[512];
    size_t n;
    int rc = tern_get(c->snap, k, key_of(i, k), buf, sizeof buf, &n);
    if (rc != TERN_OK && rc != TERN_NOTFOUND) return rc;
  }
  return tern_get(c->snap, "k99999", 6, NULL, 0, &(size_t){0}) == TERN_NOTFOUND ? TERN_OK : -1;
}
static int c_get_batch(ctx *c) {
  static char keys[NDOCS][16];
  tern_slice s[NDOCS];
  for (unsigned i = 0; i < NDOCS; i++) s[i] = (tern_slice){keys[i], key_of(i, keys[i])};
  return tern_get_batch(c->snap, s, NDOCS, cb_batch, NULL);
}
static int walk_postings(tern_postings *p, int with_docs) {
  uint64_t d;
  int rc;
  while ((rc = keep(tern_postings_next(p, &d))) == TERN_OK && d != TERN_NO_MORE_DOCS) {
    tern_slice k, v;
    if (with_docs && (rc = keep(tern_postings_doc(p, &k, &v))) != TERN_OK) break;
  }
  tern_postings_close(p);
  return rc;
}
static int c_postings(ctx *c) {
  for (unsigned g = 0; g < 5; g++) {
    char t[8];
    snprintf(t, sizeof t, "g%u", g);
    tern_term term = {"p", t, strlen(t)};
    tern_postings *p;
    TERN_TRY(tern_postings_open(&p, c->snap, &term, 1));
    TERN_TRY(walk_postings(p, 1));
  }
  return TERN_OK;
}
static int c_each_by_key(ctx *c) {
  tern_term term = {"p", "g1", 2};
  tern_postings *p;
  TERN_TRY(tern_postings_open(&p, c->snap, &term, 1));
  int rc = keep(tern_postings_each_by_key(p, 1, cb_doc, NULL));
  tern_postings_close(p);
  return rc;
}
static int c_cursor(ctx *c) {
  tern_cursor *cur;
  TERN_TRY(tern_cursor_open(&cur, c->snap, NULL));
  int rc;
  tern_slice v;
  while ((rc = keep(tern_cursor_next(cur))) == TERN_OK)
    if ((rc = keep(tern_cursor_value(cur, &v))) != TERN_OK) break;
  tern_cursor_close(cur);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}
static int c_terms(ctx *c) {
  static const char *const fields[] = {"p", "q"};
  for (int f = 0; f < 2; f++) {
    tern_terms *te;
    TERN_TRY(tern_terms_open(&te, c->snap, fields[f]));
    int rc;
    while ((rc = keep(tern_terms_next(te))) == TERN_OK) {
      tern_postings *p;
      if ((rc = keep(tern_terms_postings(te, &p))) != TERN_OK || (rc = walk_postings(p, 0)) != TERN_OK) break;
    }
    tern_terms_close(te);
    if (rc != TERN_NOTFOUND) return rc;
  }
  return TERN_OK;
}
static int c_docs_each(ctx *c) { return tern_docs_each(c->snap, NULL, cb_terms, NULL); }
static int c_doc_terms(ctx *c) {
  for (unsigned i = 0; i < NDOCS; i += 7) {
    char k[16];
    int rc = tern_doc_terms(c->snap, k, key_of(i, k), cb_terms, NULL);
    if (rc != TERN_OK && rc != TERN_NOTFOUND) return rc;
  }
  return TERN_OK;
}
static int c_split(ctx *c) {
  tern_slice out[3] = {{0}};
  int rc = tern_split_keys(c->snap, 4, out);
  for (int i = 0; i < 3; i++) free((void *)out[i].data);
  return rc;
}
static int c_backup(ctx *c) {
  char *dest = tu_path(c->root, "bk");
  int rc = tern_backup(c->snap, dest);
  tu_rmtree(dest);
  free(dest);
  return rc;
}
static int c_export(ctx *c) {
  char *dest = tu_path(c->root, "ex");
  tern_builder *b;
  int rc = tern_builder_open(&b, dest, NULL);
  if (rc == TERN_OK) {
    rc = keep(tern_export(c->snap, NULL, NULL, b));
    if (rc == TERN_OK)
      rc = tern_builder_finish(b, NULL);
    else
      tern_builder_abort(b);
  }
  tu_rmtree(dest);
  free(dest);
  return rc;
}
static int c_verify(ctx *c) { return tern_verify(c->idx); }
static int c_compact(ctx *c) { return tern_compact(c->idx); }
static int c_stats(ctx *c) {
  tern_stats *s;
  int rc = keep(tern_stats_get(&s, c->idx));
  tern_stats_free(s);
  return rc;
}
/* Writes that look keys up in the segments: puts of a bulk commit (resolve),
 * deletes, NOOVERWRITE, tern_txn_get, a deleted range. */
static int c_commit(ctx *c) {
  tern_txn *t;
  TERN_TRY(tern_txn_begin(&t, c->idx, TERN_TXN_BULK));
  int rc = TERN_OK;
  for (unsigned i = 0; rc == TERN_OK && i < NDOCS; i += 3) {
    char k[16];
    rc = keep(tern_put(t, k, key_of(i, k), "new", 3, NULL, 0));
  }
  if (rc == TERN_OK) return tern_commit(t);
  tern_abort(t);
  return rc;
}
static int c_txn_reads(ctx *c) {
  tern_txn *t;
  TERN_TRY(tern_txn_begin(&t, c->idx, 0));
  int rc = TERN_OK;
  for (unsigned i = 0; rc == TERN_OK && i < NDOCS; i++) {
    char k[16], buf[512];
    size_t kl = key_of(i, k), n;
    rc = keep(tern_txn_get(t, k, kl, buf, sizeof buf, &n));
    if (rc == TERN_OK) rc = keep(tern_delete(t, k, kl));
    if (rc == TERN_OK || rc == TERN_NOTFOUND) {
      rc = keep(tern_put_flags(t, TERN_NOOVERWRITE, k, kl, "x", 1, NULL, 0));
      if (rc == TERN_EEXIST) rc = TERN_OK;
    }
  }
  if (rc == TERN_OK) return tern_commit(t);
  tern_abort(t);
  return rc;
}
static int c_delete_range(ctx *c) {
  tern_txn *t;
  TERN_TRY(tern_txn_begin(&t, c->idx, 0));
  tern_slice from = {"k00010", 6}, to = {"k00300", 6};
  int rc = keep(tern_delete_range(t, &from, &to));
  if (rc == TERN_OK) return tern_commit(t);
  tern_abort(t);
  return rc;
}

typedef struct call {
  const char *name;
  int (*fn)(ctx *);
  int snap;  /* needs a snapshot */
  int reads; /* reads segment files past the opening (so must fail here) */
} call;

static const call calls[] = {
    {"tern_get", c_get, 1, 1},
    {"tern_get_batch", c_get_batch, 1, 1},
    {"tern_postings_*", c_postings, 1, 1},
    {"tern_postings_each_by_key", c_each_by_key, 1, 1},
    {"tern_cursor_*", c_cursor, 1, 1},
    {"tern_terms_*", c_terms, 1, 1},
    {"tern_docs_each", c_docs_each, 1, 1},
    {"tern_doc_terms", c_doc_terms, 1, 1},
    {"tern_split_keys", c_split, 1, 0}, /* the resident terms index, read by the opening */
    {"tern_backup", c_backup, 1, 1},
    {"tern_export", c_export, 1, 1},
    {"tern_verify", c_verify, 0, 1},
    {"tern_compact", c_compact, 0, 1},
    {"tern_stats_get", c_stats, 0, 0}, /* the catalog, read by the opening */
    {"tern_commit", c_commit, 0, 1},
    {"tern_txn_get/delete/put_flags", c_txn_reads, 0, 1},
    {"tern_delete_range", c_delete_range, 0, 1},
};
#define NCALLS (sizeof calls / sizeof calls[0])

static const char *const files[] = {SEG1 ".tim", SEG1 ".tix", SEG1 ".doc", SEG1 ".flt",
                                    SEG1 ".val", "catalog.mdb"};
#define NFILES (sizeof files / sizeof files[0])

static int true_cause(enum mode m, int rc) {
  switch (m) {
  case DAMAGE: return rc == TERN_ECORRUPT;
  case MISSING: return rc == -ENOENT || rc == TERN_ECORRUPT;
  default: return rc == -EIO;
  }
}

static unsigned g_bad;

/* Checks a failure: the true cause, and the file named. */
static void check(const char *what, const char *file, enum mode m, int rc, const char *msg) {
  if (true_cause(m, rc) && strstr(msg, file)) return;
  fprintf(stderr, "%s, %s %s: %d (%s) \"%s\"\n", what, mode_name[m], file, rc, tern_strerror(rc),
          msg);
  g_bad++;
}

/* One round: returns 1 when the call (or the opening before it) failed. */
static int round_of(const char *root, const char *base, const call *cl, const char *file,
                    enum mode m) {
  char *dir = tu_path(root, "ix");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s'", dir, base, dir);
  assert_int_equal(system(cmd), 0);
  char *path = tu_path(dir, file);
  ctx c = {root, dir, NULL, NULL};
  int failed = 0;
  char msg[1024];
  g_msg[0] = '\0';
  if (m == MISSING) assert_int_equal(unlink(path), 0);
  if (m == DAMAGE && !cl->snap) damage(path);
  if (m == EIO_READ) {
    ff_install(); /* only here: its stashes of unlinked files would be strays elsewhere */
    ff_only(file);
    ff_fail_nth(FF_PREAD, 1, EIO);
  }
  int rc = tern_open(&c.idx, dir, 0, NULL);
  if (rc == TERN_OK && cl->snap) rc = tern_snapshot_open(&c.snap, c.idx);
  const char *stage = cl->snap ? "open/snapshot" : "tern_open";
  if (rc == TERN_OK) {
    if (m == DAMAGE && cl->snap) damage(path);
    rc = cl->fn(&c);
    stage = cl->name;
  }
  snprintf(msg, sizeof msg, "%s", g_msg[0] ? g_msg : tern_errmsg());
  if (rc != TERN_OK && !(m == MISSING && rc == TERN_ENOTINDEX && !strcmp(file, "catalog.mdb"))) {
    char what[256];
    snprintf(what, sizeof what, "%s (for %s)", stage, cl->name);
    check(what, file, m, rc, msg);
    failed = stage == cl->name;
  }
  if (c.snap) tern_snapshot_close(c.snap);
  if (c.idx) tern_close(c.idx);
  if (m == EIO_READ) {
    ff_reset();
    ff_only(NULL);
    ff_uninstall();
  }
  free(path);
  tu_rmtree(dir);
  free(dir);
  return failed;
}

static void test_every_call_names_the_file(void **state) {
  (void)state;
  char *root = tu_tmpdir("errmsg-files");
  char *base = tu_path(root, "base");
  build_base(base);
  unsigned fails[NCALLS] = {0};
  for (size_t i = 0; i < NCALLS; i++)
    for (size_t f = 0; f < NFILES; f++)
      for (int m = 0; m < NMODES; m++) {
        if (m == EIO_READ && !strcmp(files[f], "catalog.mdb")) continue; /* LMDB maps it */
        fails[i] += (unsigned)round_of(root, base, &calls[i], files[f], (enum mode)m);
      }
  for (size_t i = 0; i < NCALLS; i++) {
    print_message("%-32s failed in %u rounds\n", calls[i].name, fails[i]);
    if (!fails[i] && calls[i].reads) {
      fprintf(stderr, "%s never failed: the test did not reach it\n", calls[i].name);
      g_bad++;
    }
  }
  assert_int_equal(g_bad, 0);
  tu_rmtree(root);
  free(base);
  free(root);
}

int main(void) {
  tu_seed();
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_call_names_the_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#define NDOCS 400u
#define SEG1 "s000000000001"

enum mode { DAMAGE, MISSING, EIO_READ, EACCES_OPEN, NMODES };
static const char *const mode_name[NMODES] = {"damaged", "missing", "EIO", "EACCES"};

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
  case EACCES_OPEN: return rc == -EACCES;
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
  if (m == EIO_READ || m == EACCES_OPEN) {
    ff_install(); /* only here: its stashes of unlinked files would be strays elsewhere */
    ff_only(file);
    if (m == EIO_READ)
      ff_fail_nth(FF_PREAD, 1, EIO);
    else
      ff_fail_nth(FF_OPEN, 1, EACCES); /* a permission error (root bypasses chmod) */
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
  if (m == EIO_READ || m == EACCES_OPEN) {
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
        if ((m == EIO_READ || m == EACCES_OPEN) && !strcmp(files[f], "catalog.mdb"))
          continue; /* LMDB's own reads: not through the codec's file layer */
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


/* ---- built segments: tern_builder_verify and tern_ingest read them */

static char *build_segment(const char *root) {
  char *path = tu_path(root, "built");
  tern_builder *b;
  ET_OK(tern_builder_open(&b, path, NULL));
  for (unsigned i = 0; i < NDOCS; i++) {
    char k[16], v[300], g[8];
    size_t kl = (size_t)sprintf(k, "m%05u", i), vl = i % 3 ? 10 : 300;
    memset(v, 'v', vl);
    snprintf(g, sizeof g, "g%u", i % 5);
    tern_term t = {"p", g, strlen(g)};
    ET_OK(tern_builder_add(b, k, kl, v, vl, &t, 1));
  }
  ET_OK(tern_builder_finish(b, NULL));
  return path;
}

static int built_round(const char *root, const char *ixbase, const char *built, const char *file,
                       enum mode m, int ingest) {
  char *dir = tu_path(root, "ix"), *seg = tu_path(root, "seg");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' && cp -a '%s' '%s' && cp -a '%s' '%s'", dir, seg,
           ixbase, dir, built, seg);
  assert_int_equal(system(cmd), 0);
  char name[64];
  snprintf(name, sizeof name, "s000000000001%s", file);
  char *path = tu_path(seg, name);
  tern_index *idx = NULL;
  if (ingest) ET_OK(tern_open(&idx, dir, 0, NULL));
  if (m == MISSING) assert_int_equal(unlink(path), 0);
  if (m == DAMAGE) damage(path);
  if (m == EIO_READ || m == EACCES_OPEN) {
    ff_install();
    ff_only(name);
    ff_fail_nth(m == EIO_READ ? FF_PREAD : FF_OPEN, 1, m == EIO_READ ? EIO : EACCES);
  }
  const char *segp = seg;
  int rc = ingest ? tern_ingest(idx, &segp, 1, 0) : tern_builder_verify(seg, NULL);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", tern_errmsg());
  if (m == EIO_READ || m == EACCES_OPEN) {
    ff_reset();
    ff_only(NULL);
    ff_uninstall();
  }
  if (rc != TERN_OK) {
    int ok = true_cause(m, rc) || (m == MISSING && rc == TERN_EINVAL); /* tern.h: not a segment */
    if (!ok || !strstr(msg, name)) {
      fprintf(stderr, "%s, %s %s: %d (%s) \"%s\"\n", ingest ? "tern_ingest" : "tern_builder_verify",
              mode_name[m], name, rc, tern_strerror(rc), msg);
      g_bad++;
    }
  }
  if (idx) tern_close(idx);
  tu_rmtree(dir);
  tu_rmtree(seg);
  free(path);
  free(dir);
  free(seg);
  return rc != TERN_OK;
}

static void test_built_segments_name_the_file(void **state) {
  (void)state;
  char *root = tu_tmpdir("errmsg-built");
  char *base = tu_path(root, "base");
  build_base(base);
  char *built = build_segment(root);
  static const char *const exts[] = {".tim", ".tix", ".doc", ".flt", ".val"};
  unsigned fails[2] = {0};
  for (int ingest = 0; ingest < 2; ingest++)
    for (size_t f = 0; f < 5; f++)
      for (int m = 0; m < NMODES; m++)
        fails[ingest] += (unsigned)built_round(root, base, built, exts[f], (enum mode)m, ingest);
  print_message("tern_builder_verify failed in %u rounds, tern_ingest in %u\n", fails[0], fails[1]);
  assert_true(fails[0] >= 15 && fails[1] >= 15);
  assert_int_equal(g_bad, 0);
  tu_rmtree(root);
  free(built);
  free(base);
  free(root);
}

/* ---- writes: every failure of a file written names a path in the
 * directory written (the index, a backup's or a builder's) */

typedef struct wop {
  const char *name;
  int (*fn)(tern_index *idx, const char *root, char *dest, size_t cap);
} wop;

static int w_bulk(tern_index *idx, const char *root, char *dest, size_t cap) {
  (void)root, (void)dest, (void)cap;
  tern_txn *t;
  TERN_TRY(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (unsigned i = 0; i < 50; i++) {
    char k[16];
    int rc = tern_put(t, k, (size_t)sprintf(k, "w%05u", i), "v", 1, NULL, 0);
    if (rc != TERN_OK) {
      tern_abort(t);
      return rc;
    }
  }
  return tern_commit(t);
}
static int w_flush(tern_index *idx, const char *root, char *dest, size_t cap) {
  (void)root, (void)dest, (void)cap;
  return tern_flush(idx);
}
static int w_compact(tern_index *idx, const char *root, char *dest, size_t cap) {
  (void)root, (void)dest, (void)cap;
  return tern_compact(idx);
}
static int w_backup(tern_index *idx, const char *root, char *dest, size_t cap) {
  snprintf(dest, cap, "%s/bk", root);
  tern_snapshot *s;
  TERN_TRY(tern_snapshot_open(&s, idx));
  int rc = keep(tern_backup(s, dest));
  tern_snapshot_close(s);
  return rc;
}
static int w_export(tern_index *idx, const char *root, char *dest, size_t cap) {
  snprintf(dest, cap, "%s/ex", root);
  tern_snapshot *s;
  TERN_TRY(tern_snapshot_open(&s, idx));
  tern_builder *b;
  int rc = keep(tern_builder_open(&b, dest, NULL));
  if (rc == TERN_OK) {
    rc = keep(tern_export(s, NULL, NULL, b));
    if (rc == TERN_OK)
      rc = keep(tern_builder_finish(b, NULL));
    else
      tern_builder_abort(b);
  }
  tern_snapshot_close(s);
  return rc;
}

static const wop wops[] = {{"bulk tern_commit", w_bulk},
                           {"tern_flush", w_flush},
                           {"tern_compact", w_compact},
                           {"tern_backup", w_backup},
                           {"tern_builder_* + tern_export", w_export}};

static int write_round(const char *root, const char *base, const wop *w, ff_kind kind, int err,
                       uint64_t n) {
  char *dir = tu_path(root, "ix");
  char cmd[4096], dest[1024] = "";
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s/bk' '%s/bk.tmp' '%s/ex' '%s/ex.tmp' && cp -a '%s' '%s'",
           dir, root, root, root, root, base, dir);
  assert_int_equal(system(cmd), 0);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL));
  g_msg[0] = '\0';
  ff_install();
  ff_fail_nth(kind, n, err);
  int rc = w->fn(idx, root, dest, sizeof dest);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", g_msg[0] ? g_msg : tern_errmsg());
  int fired = ff_fired();
  ff_reset();
  ff_uninstall();
  tern_close(idx);
  if (rc != TERN_OK && rc != TERN_EPARTIAL) {
    /* A file the call reads (in the index) or writes (in the index, in
     * DEST or DEST.tmp), or a directory it fsyncs (those, or DEST's
     * parent), said to be one. */
    char in_dir[1100];
    snprintf(in_dir, sizeof in_dir, "%s/", dir);
    int named = strstr(msg, in_dir) != NULL || strstr(msg, ": fsync of the directory: ") ||
                strstr(msg, ": opening the directory to fsync it: ");
    if (!named && dest[0]) {
      const char *at = strstr(msg, dest);
      named = at && (at[strlen(dest)] == '/' || !strncmp(at + strlen(dest), ".tmp/", 5));
    }
    if (rc != -err || !named) {
      fprintf(stderr, "%s, %s #%llu %s: %d (%s) \"%s\"\n", w->name, ff_kind_name[kind],
              (unsigned long long)n, strerror(err), rc, tern_strerror(rc), msg);
      g_bad++;
    }
  }
  free(dir);
  return fired;
}

static void test_writes_name_the_file(void **state) {
  (void)state;
  char *root = tu_tmpdir("errmsg-writes");
  char *base = tu_path(root, "base");
  build_base(base);
  static const struct {
    ff_kind kind;
    int err;
  } faults[] = {{FF_OPEN, EACCES}, {FF_WRITE, EIO}, {FF_WRITE, ENOSPC}, {FF_SYNC, EIO},
                {FF_RENAME, EIO}};
  unsigned rounds = 0;
  for (size_t w = 0; w < sizeof wops / sizeof wops[0]; w++)
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++)
      for (uint64_t n = 1; n < 500 && write_round(root, base, &wops[w], faults[f].kind, faults[f].err, n); n++)
        rounds++;
  print_message("%u faulted writes\n", rounds);
  assert_true(rounds > 50);
  assert_int_equal(g_bad, 0);
  tu_rmtree(root);
  free(base);
  free(root);
}

/* ---- the catalog, its lock file and write.lock refused by permissions:
 * as `nobody` (root reads everything), or skipped saying why */

/* In a child as `nobody`: tern_open of dir (writable) must fail with
 * -EACCES naming `file`; exit 0 when it does. */
static int open_as_nobody(const char *dir, const char *file) {
  struct passwd *pw = getpwnam("nobody");
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(90);
    if (access(dir, R_OK | W_OK | X_OK) != 0) _exit(97); /* $TMPDIR closed to others */
    tern_index *idx;
    int rc = tern_open(&idx, dir, 0, NULL);
    if (rc != -EACCES || !strstr(tern_errmsg(), file)) {
      fprintf(stderr, "%s refused: %d (%s) \"%s\"\n", file, rc, tern_strerror(rc), tern_errmsg());
      _exit(1);
    }
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_permissions_name_the_file(void **state) {
  (void)state;
  if (geteuid() != 0 || !getpwnam("nobody")) {
    printf("skipped: needs root and a user \"nobody\"\n");
    return;
  }
  char *root = tu_tmpdir("errmsg-perm");
  char *dir = tu_path(root, "ix");
  build_base(dir);
  static const char *const refused[] = {"catalog.mdb", "catalog.mdb-lock", "write.lock"};
  for (size_t f = 0; f < 3; f++) {
    chmod(root, 0755);
    chmod(dir, 0777);
    for (size_t g = 0; g < 3; g++) {
      char *p = tu_path(dir, refused[g]);
      chmod(p, g == f ? 0644 : 0666); /* root's, not writable by others */
      free(p);
    }
    int rc = open_as_nobody(dir, refused[f]);
    if (rc == 97) {
      printf("skipped: the temporary directory is closed to others\n");
      break;
    }
    assert_int_equal(rc, 0);
  }
  tu_rmtree(root);
  free(dir);
  free(root);
}

int main(void) {
  tu_seed();
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_call_names_the_file),
      cmocka_unit_test(test_built_segments_name_the_file),
      cmocka_unit_test(test_writes_name_the_file),
      cmocka_unit_test(test_permissions_name_the_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

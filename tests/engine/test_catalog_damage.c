/* SPDX-License-Identifier: MIT */
/*
 * test_catalog_damage.c — the damage battery for catalog.mdb.
 *
 * An index of two segments (one with deletions) and a write buffer is
 * built once; each trial restores a copy and damages its catalog: byte
 * flips, truncations, zeroed and swapped pages, tables dropped or emptied
 * with raw LMDB, another program's LMDB file, a FIFO or a directory in
 * its place.  Then every read (the public API in a child, and the `tern`
 * CLI at $TERN_BIN) must give the intact answer or a precise error (exit
 * 2, or 3 from verify) -- never a wrong answer, a signal or a hang -- and
 * every write (API put+commit, `tern put`, `tern import`, `tern create`)
 * must leave every segment file byte-identical.  Children run under a
 * timeout.  The tally is printed; TERN_TEST_SCALE runs more trials.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/rawcatalog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <xxhash.h>

#define TERN_CATALOG_FILE_NAME "catalog.mdb"
#define NKEYS 3000u
#define NBUF 200u
#define CHILD_TIMEOUT_MS 20000

static const char *g_bin;

typedef struct tally {
  unsigned trials, runs, intact, clean, wrong, signals, hangs, destroyed;
} tally;

/* ---------------------------------------------------------------- model */

typedef struct model {
  int present[NKEYS];
  char val[NKEYS][24];
} model;

static model g_model;

static void key_of(unsigned i, char out[16]) { snprintf(out, 16, "k%05u", i); }

/* ---------------------------------------------------------------- files */

typedef struct file {
  char name[256];
  uint8_t *bytes;
  size_t len;
  int segment;
} file;

typedef struct pristine {
  file f[32];
  size_t n;
} pristine;

static pristine g_base;

static void snapshot_dir(const char *dir, pristine *p) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  p->n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    assert_true(p->n < 32);
    file *f = &p->f[p->n++];
    snprintf(f->name, sizeof f->name, "%s", e->d_name);
    char *path = tu_path(dir, e->d_name);
    f->bytes = tu_read_file(path, &f->len);
    free(path);
    f->segment = e->d_name[0] == 's';
  }
  closedir(d);
}

static void restore_dir(const char *dir) {
  tu_rmtree(dir);
  assert_int_equal(mkdir(dir, 0777), 0);
  for (size_t i = 0; i < g_base.n; i++) {
    char *path = tu_path(dir, g_base.f[i].name);
    tu_write_file(path, g_base.f[i].bytes, g_base.f[i].len);
    free(path);
  }
}

/* Segment files missing or changed since the pristine copy. */
static unsigned segments_changed(const char *dir) {
  unsigned n = 0;
  for (size_t i = 0; i < g_base.n; i++) {
    const file *f = &g_base.f[i];
    if (!f->segment) continue;
    char *path = tu_path(dir, f->name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != f->len) {
      n++;
    } else {
      size_t len;
      uint8_t *b = tu_read_file(path, &len);
      n += XXH3_64bits(b, len) != XXH3_64bits(f->bytes, f->len);
      free(b);
    }
    free(path);
  }
  return n;
}

/* ---------------------------------------------------------------- building */

static void build_base(const char *dir) {
  tu_rng r;
  tu_rng_init(&r, 0xca7a);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  for (int part = 0; part < 2; part++) { /* two bulk segments */
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
    for (unsigned i = part * 2000u; i < (part ? NKEYS : 2000u); i++) {
      char k[16];
      key_of(i, k);
      snprintf(g_model.val[i], sizeof g_model.val[i], "v%05u-%08llx", i,
               (unsigned long long)(tu_next(&r) & 0xffffffffu));
      g_model.present[i] = 1;
      ET_OK(tern_put(t, k, strlen(k), g_model.val[i], strlen(g_model.val[i]), NULL, 0));
    }
    ET_OK(tern_commit(t));
  }
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0)); /* deletions in segment 1, and a buffer */
  for (unsigned i = 0; i < 300; i++) {
    unsigned id = (unsigned)tu_below(&r, 2000);
    char k[16];
    key_of(id, k);
    if (g_model.present[id]) ET_OK(tern_delete(t, k, strlen(k)));
    g_model.present[id] = 0;
  }
  for (unsigned i = 0; i < NBUF; i++) {
    unsigned id = (unsigned)tu_below(&r, NKEYS);
    char k[16];
    key_of(id, k);
    snprintf(g_model.val[id], sizeof g_model.val[id], "b%05u-%08llx", id,
             (unsigned long long)(tu_next(&r) & 0xffffffffu));
    g_model.present[id] = 1;
    ET_OK(tern_put(t, k, strlen(k), g_model.val[id], strlen(g_model.val[id]), NULL, 0));
  }
  ET_OK(tern_commit(t));
  tern_stats *s;
  ET_OK(tern_stats_get(&s, idx));
  assert_int_equal(s->nsegments, 2);
  assert_true(s->buffered > 0 && s->deleted > 0);
  tern_stats_free(s);
  ET_OK(tern_close(idx));
}

/* ---------------------------------------------------------------- damage */

enum {
  D_FLIP,
  D_TRUNCATE,
  D_ZERO_PAGE,
  D_SWAP_PAGES,
  D_DROP_TABLE,
  D_EMPTY_TABLE,
  D_FOREIGN,
  D_FIFO,
  D_DIRECTORY,
  D_KINDS
};
static const char *const k_damage[D_KINDS] = {"byte flips", "truncation", "zeroed page",
                                              "swapped pages", "dropped table", "emptied table",
                                              "foreign LMDB", "FIFO", "directory"};

static void raw_foreign(const char *cat, tu_rng *r) {
  unlink(cat);
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi;
  /* Half the time a named table tern also has, to look like tern's. */
  const char *name = tu_below(r, 2) ? "meta" : NULL;
  assert_int_equal(mdb_dbi_open(t, name, name ? MDB_CREATE : 0, &dbi), 0);
  for (int i = 0; i < 50; i++) {
    char k[16], v[32];
    snprintf(k, sizeof k, "key%d", i);
    snprintf(v, sizeof v, "someone else's %d", i);
    MDB_val mk = {strlen(k), k}, mv = {strlen(v), v};
    assert_int_equal(mdb_put(t, dbi, &mk, &mv, 0), 0);
  }
  if (name) { /* and another program's own table */
    MDB_dbi other;
    assert_int_equal(mdb_dbi_open(t, "users", MDB_CREATE, &other), 0);
  }
  rc_commit(env, t);
}

static const size_t k_page = 4096;

static void damage(const char *dir, int kind, tu_rng *r, char *what, size_t cap) {
  /* The tables of a catalog tern creates (version 4: the buffered
   * documents are in the main database, sealed one by one; the page walk
   * at open checks every tree's entry count against LMDB's). */
  static const char *const tables[3] = {"meta", "segments", "livedocs"};
  char *cat = tu_path(dir, TERN_CATALOG_FILE_NAME);
  size_t len;
  uint8_t *b = tu_read_file(cat, &len);
  size_t pages = len / k_page;
  switch (kind) {
  case D_FLIP: {
    unsigned n = 1 + (unsigned)tu_below(r, 8);
    size_t first = 0;
    for (unsigned i = 0; i < n; i++) {
      size_t at = (size_t)tu_below(r, len);
      if (!i) first = at;
      b[at] ^= (uint8_t)(1u + tu_below(r, 255));
    }
    snprintf(what, cap, "%u byte flips, first at %zu", n, first);
    tu_write_file(cat, b, len);
    break;
  }
  case D_TRUNCATE: {
    size_t to = (size_t)tu_below(r, len);
    if (tu_below(r, 3) == 0) to = to / k_page * k_page; /* page-aligned cuts too */
    snprintf(what, cap, "truncated to %zu of %zu", to, len);
    tu_write_file(cat, b, to);
    break;
  }
  case D_ZERO_PAGE: {
    size_t p = (size_t)tu_below(r, pages);
    memset(b + p * k_page, 0, k_page);
    snprintf(what, cap, "page %zu of %zu zeroed", p, pages);
    tu_write_file(cat, b, len);
    break;
  }
  case D_SWAP_PAGES: {
    size_t p = (size_t)tu_below(r, pages), q = (size_t)tu_below(r, pages);
    if (p == q) q = (p + 1) % pages;
    uint8_t tmp[4096];
    memcpy(tmp, b + p * k_page, k_page);
    memcpy(b + p * k_page, b + q * k_page, k_page);
    memcpy(b + q * k_page, tmp, k_page);
    snprintf(what, cap, "pages %zu and %zu swapped", p, q);
    tu_write_file(cat, b, len);
    break;
  }
  case D_DROP_TABLE:
  case D_EMPTY_TABLE: {
    const char *t = tables[tu_below(r, 3)];
    rc_drop(cat, t, kind == D_DROP_TABLE);
    snprintf(what, cap, "table %s %s", t, kind == D_DROP_TABLE ? "dropped" : "emptied");
    break;
  }
  case D_FOREIGN:
    raw_foreign(cat, r);
    snprintf(what, cap, "another program's LMDB file");
    break;
  case D_FIFO:
    unlink(cat);
    assert_int_equal(mkfifo(cat, 0666), 0);
    snprintf(what, cap, "a FIFO");
    break;
  default:
    unlink(cat);
    assert_int_equal(mkdir(cat, 0777), 0);
    snprintf(what, cap, "a directory");
    break;
  }
  free(b);
  free(cat);
}

/* ---------------------------------------------------------------- children */

enum { R_INTACT = 0, R_ERROR = 2, R_VERIFY_FAILED = 3, R_WRONG = 10, R_SIGNAL = 100, R_HANG = 101 };

/* Waits for pid up to the timeout; kills it on a hang. */
static int wait_child(pid_t pid) {
  int status;
  for (int ms = 0; ms < CHILD_TIMEOUT_MS; ms++) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      if (WIFSIGNALED(status)) return R_SIGNAL;
      return WEXITSTATUS(status);
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return R_HANG;
}

/* Every key through the API: the model's answer or an error, nothing else. */
static int api_reads(const char *dir) {
  tern_index *idx;
  int rc = tern_open(&idx, dir, TERN_RDONLY, NULL);
  if (rc != TERN_OK) return R_ERROR;
  tern_snapshot *s;
  if (tern_snapshot_open(&s, idx) != TERN_OK) {
    tern_close(idx);
    return R_ERROR;
  }
  int result = R_INTACT;
  for (unsigned i = 0; i < NKEYS && result == R_INTACT; i++) {
    char k[16], v[64];
    size_t vlen;
    key_of(i, k);
    rc = tern_get(s, k, strlen(k), v, sizeof v, &vlen);
    if (rc == TERN_OK) {
      if (!g_model.present[i] || vlen != strlen(g_model.val[i]) || memcmp(v, g_model.val[i], vlen))
        result = R_WRONG;
    } else if (rc == TERN_NOTFOUND) {
      if (g_model.present[i]) result = R_WRONG;
    } else {
      result = R_ERROR;
    }
  }
  if (result == R_INTACT) {
    rc = tern_verify(idx);
    if (rc != TERN_OK && rc != TERN_ECORRUPT) result = R_ERROR;
  }
  tern_snapshot_close(s);
  tern_close(idx);
  return result;
}

/* In a child, a signal must kill it: cmocka's handlers would carry on
 * running the test in the child. */
static void default_signals(void) {
  const int sigs[] = {SIGBUS, SIGSEGV, SIGABRT, SIGILL, SIGFPE};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    signal(sigs[i], SIG_DFL);
}

static int run_api(int (*fn)(const char *), const char *dir) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    default_signals();
    _exit(fn(dir));
  }
  return wait_child(pid);
}

/* Runs the CLI with stdout to `out` (NULL: discarded); its exit status. */
static int run_cli(const char *out, const char *const *args) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int devnull = open("/dev/null", O_RDWR);
    if (fd < 0 || devnull < 0) _exit(99);
    dup2(fd, 1);
    dup2(devnull, 2);
    dup2(devnull, 0);
    execv(g_bin, (char *const *)args);
    _exit(98);
  }
  return wait_child(pid);
}

/* `tern get` of present keys: their values (exit 0), or exit 2. */
static int cli_get(const char *dir, const char *out, tu_rng *r) {
  char keys[8][16];
  const char *args[12] = {g_bin, "get", dir};
  size_t na = 3;
  unsigned ids[8];
  for (unsigned n = 0; n < 8;) {
    unsigned id = (unsigned)tu_below(r, NKEYS);
    if (!g_model.present[id]) continue;
    ids[n] = id;
    key_of(id, keys[n]);
    args[na++] = keys[n++];
  }
  args[na] = NULL;
  int rc = run_cli(out, args);
  if (rc != 0) return rc == 2 || rc >= R_SIGNAL ? rc : R_WRONG;
  size_t len;
  char *got = (char *)tu_read_file(out, &len), expect[8 * 48], *p = expect;
  for (unsigned n = 0; n < 8; n++)
    p += sprintf(p, "%s\t%s\n", keys[n], g_model.val[ids[n]]);
  int same = len == (size_t)(p - expect) && !memcmp(got, expect, len);
  free(got);
  return same ? R_INTACT : R_WRONG;
}

static void count(tally *t, int rc, int write, const char *what, const char *cmd) {
  t->runs++;
  if (rc == R_INTACT)
    t->intact++;
  else if (rc == R_ERROR || (rc == R_VERIFY_FAILED && !write))
    t->clean++;
  else if (rc == R_SIGNAL)
    t->signals++;
  else if (rc == R_HANG)
    t->hangs++;
  else
    t->wrong++;
  if (rc != R_INTACT && rc != R_ERROR && !(rc == R_VERIFY_FAILED && !write))
    fprintf(stderr, "  %s after %s: result %d\n", cmd, what, rc);
}

static int api_write(const char *dir) {
  tern_index *idx;
  if (tern_open(&idx, dir, 0, NULL) != TERN_OK) return R_ERROR;
  tern_txn *t;
  int rc = tern_txn_begin(&t, idx, 0);
  if (rc == TERN_OK) rc = tern_put(t, "new-key", 7, "nv", 2, NULL, 0);
  if (rc == TERN_OK) rc = tern_commit(t);
  else if (t) tern_abort(t);
  tern_close(idx);
  return rc == TERN_OK ? R_INTACT : R_ERROR;
}

static void one_trial(const char *dir, int kind, uint64_t salt, tally *t, const char *scratch) {
  char what[128];
  tu_rng r;
  tu_rng_init(&r, salt);
  restore_dir(dir);
  damage(dir, kind, &r, what, sizeof what);
  if (getenv("TERN_VERBOSE")) fprintf(stderr, "trial %u: %s: %s\n", t->trials, k_damage[kind], what);
  t->trials++;
  count(t, run_api(api_reads, dir), 0, what, "API reads");
  char *out = tu_path(scratch, "out");
  count(t, cli_get(dir, out, &r), 0, what, "tern get");
  const char *verify[] = {g_bin, "verify", dir, NULL};
  count(t, run_cli(NULL, verify), 0, what, "tern verify");
  const char *stats[] = {g_bin, "stats", "--json", dir, NULL};
  count(t, run_cli(NULL, stats), 0, what, "tern stats");
  /* Writes: each on a freshly damaged copy; segment files must stay. */
  char *tsv = tu_path(scratch, "imp.tsv");
  const char *put[] = {g_bin, "put", dir, "new-key", "nv", NULL};
  const char *import[] = {g_bin, "import", "-q", dir, tsv, NULL};
  const char *create[] = {g_bin, "create", dir, NULL};
  const char *const *writes[] = {put, import, create};
  const char *names[] = {"tern put", "tern import", "tern create"};
  for (int w = -1; w < 3; w++) {
    tu_rng_init(&r, salt);
    restore_dir(dir);
    damage(dir, kind, &r, what, sizeof what);
    int rc = w < 0 ? run_api(api_write, dir) : run_cli(NULL, writes[w]);
    count(t, rc, 1, what, w < 0 ? "API put+commit" : names[w]);
    unsigned lost = segments_changed(dir);
    if (lost) fprintf(stderr, "  %s after %s: %u segment files changed\n",
                      w < 0 ? "API put+commit" : names[w], what, lost);
    t->destroyed += lost;
    if (rc == R_INTACT) count(t, run_api(api_reads, dir), 0, what, "API reads after a write");
  }
  free(tsv);
  free(out);
}

static void test_catalog_battery(void **state) {
  (void)state;
  char *base = tu_tmpdir("damage-base"), *scratch = tu_tmpdir("damage-scratch");
  char *ix = tu_path(base, "ix"), *dir = tu_path(scratch, "ix");
  build_base(ix);
  snapshot_dir(ix, &g_base);
  char *tsv = tu_path(scratch, "imp.tsv");
  tu_write_file(tsv, "imp001\tx\nimp002\ty\n", 18);
  free(tsv);
  uint64_t seed = tu_seed();
  unsigned per_kind = 12u * tu_scale();
  tally t = {0};
  for (int kind = 0; kind < D_KINDS; kind++) {
    unsigned n = kind >= D_FOREIGN ? 2u : kind >= D_DROP_TABLE ? 4u * tu_scale() : per_kind;
    for (unsigned i = 0; i < n; i++)
      one_trial(dir, kind, seed ^ ((uint64_t)kind << 40) ^ i, &t, scratch);
  }
  printf("catalog damage battery (seed %llu): %u trials, %u runs: %u intact answers, %u clean "
         "errors, %u wrong answers, %u signals, %u hangs, %u segment files destroyed\n",
         (unsigned long long)seed, t.trials, t.runs, t.intact, t.clean, t.wrong, t.signals, t.hangs,
         t.destroyed);
  for (size_t i = 0; i < g_base.n; i++)
    free(g_base.f[i].bytes);
  assert_int_equal(t.wrong, 0);
  assert_int_equal(t.signals, 0);
  assert_int_equal(t.hangs, 0);
  assert_int_equal(t.destroyed, 0);
  assert_true(t.clean > 0);
  free(ix);
  free(dir);
  free(base);
  free(scratch);
}

/* The older meta page's transaction number raised past the newer's (same
 * parity, so its slot looks right): LMDB would read the commit before the
 * last as if it were the last, every record soundly sealed — k00006 and
 * the other deletions of the last commit undone.  The open refuses. */
static void test_older_meta_made_newest(void **state) {
  (void)state;
  enum { META_TXNID_AT = 16 + 128 }; /* page header, then MDB_meta's txnid */
  char *root = tu_tmpdir("damage-meta"), *ix = tu_path(root, "ix");
  build_base(ix);
  char *cat = tu_path(ix, TERN_CATALOG_FILE_NAME);
  size_t len;
  uint8_t *b = tu_read_file(cat, &len);
  uint64_t txn[2];
  for (int i = 0; i < 2; i++)
    memcpy(&txn[i], b + i * k_page + META_TXNID_AT, 8); /* little-endian host, as LMDB's */
  int older = txn[1] < txn[0];
  uint64_t raised = txn[older] + 1000000; /* even: the same slot parity */
  memcpy(b + (size_t)older * k_page + META_TXNID_AT, &raised, 8);
  tu_write_file(cat, b, len);
  assert_int_equal(api_reads(ix), R_ERROR);
  tern_index *idx;
  assert_int_equal(tern_open(&idx, ix, TERN_RDONLY, NULL), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "not two in a row"));
  free(b);
  free(cat);
  tu_rmtree(root);
  free(ix);
  free(root);
}

int main(void) {
  et_prefer_tmpfs();
  g_bin = getenv("TERN_BIN");
  if (!g_bin) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_older_meta_made_newest),
                                     cmocka_unit_test(test_catalog_battery)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

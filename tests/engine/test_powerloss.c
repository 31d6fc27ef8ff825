/* SPDX-License-Identifier: MIT */
/*
 * test_powerloss.c — power loss under strict POSIX (faultfs.h, ff_strict):
 * a created or renamed file survives only if its own directory was
 * fsynced after it, as LevelDB, RocksDB and SQLite assume.  For each
 * scenario (create + commits, create + bulk import, commit, flush, merge,
 * compact, backup) and each sync point N (until the scenario makes fewer
 * than N), torn or not: cut the power at sync N, make the files what a
 * reboot finds, reopen, and require that every acknowledged commit is
 * there (the index holds the last acknowledged state or a later one the
 * scenario was making), tern_verify passes, an acknowledged creation
 * opens without TERN_CREATE and an unacknowledged one is finished or
 * replaced by tern_open(TERN_CREATE), never refused.  Then, for creation,
 * every call of the creation fails once (EIO, ENOSPC): the next
 * tern_open(TERN_CREATE) must make a sound, empty index.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#define NK 200
#define SALT 0x9a55

typedef struct model {
  uint8_t ver[NK]; /* 0: absent */
} model;

enum scen { SC_CREATE, SC_IMPORT, SC_COMMIT, SC_FLUSH, SC_MERGE, SC_COMPACT, SC_BACKUP, NSC };
static const char *const sc_name[NSC] = {"create + commits", "create + import", "commit",
                                         "flush", "merge", "compact", "backup"};

/* Acknowledged states of one run: acked[0] is where it starts. */
typedef struct run {
  model states[8];
  int nstates;   /* states the scenario passes through (all of them) */
  int acked;     /* index of the last acknowledged state */
  int created;   /* the creating tern_open returned TERN_OK */
  int backed_up; /* tern_backup returned TERN_OK */
} run;

static size_t value_of(uint32_t id, uint8_t ver, uint8_t *out) {
  size_t len = 1 + (id * 7u + ver) % 90;
  for (size_t i = 0; i < len; i++) out[i] = (uint8_t)(id * 31 + ver * 17 + i);
  return len;
}

static tern_options options(void) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* flushes only when asked */
  o.map_size = 64u << 20;
  return o;
}

static int put_range(tern_index *idx, unsigned flags, model *m, uint32_t from, uint32_t n,
                     uint8_t ver) {
  tern_txn *t;
  int rc = tern_txn_begin(&t, idx, flags);
  for (uint32_t id = from; rc == TERN_OK && id < from + n; id++) {
    uint8_t key[ET_KEY_MAX], val[128], g = (uint8_t)('a' + id % 3);
    tern_term term = {"a", &g, 1};
    size_t kl = et_key(id, SALT, key);
    rc = tern_put(t, key, kl, val, value_of(id, ver, val), &term, 1);
    m->ver[id] = ver;
  }
  if (rc == TERN_OK) return tern_commit(t);
  if (t) tern_abort(t);
  return rc;
}

/* The next state: a copy of the current one that put_range changes. */
static model *next_state(run *r) {
  assert_true(r->nstates < 8);
  r->states[r->nstates] = r->states[r->nstates - 1];
  return &r->states[r->nstates++];
}

static int acked(run *r, int rc) {
  if (rc == TERN_OK || rc == TERN_EPARTIAL) r->acked = r->nstates - 1;
  return rc == TERN_OK || rc == TERN_EPARTIAL ? TERN_OK : rc;
}

/* Runs the scenario until its first failure (after a power cut, every call
 * fails).  `dir` is the index; `dest` backup's destination. */
static void play(enum scen sc, const char *dir, const char *dest, run *r) {
  tern_options o = options();
  tern_index *idx = NULL;
  int creating = sc == SC_CREATE || sc == SC_IMPORT;
  int rc = tern_open(&idx, dir, (creating ? TERN_CREATE : 0) | TERN_FOREGROUND, &o);
  if (rc != TERN_OK) return;
  if (creating) r->created = 1;
  switch (sc) {
  case SC_CREATE:
    for (uint32_t i = 0; rc == TERN_OK && i < 3; i++)
      rc = acked(r, put_range(idx, 0, next_state(r), i * 10, 10, 1));
    break;
  case SC_IMPORT:
    rc = acked(r, put_range(idx, TERN_TXN_BULK, next_state(r), 0, 150, 1));
    if (rc == TERN_OK) rc = acked(r, put_range(idx, 0, next_state(r), 150, 10, 1));
    break;
  case SC_COMMIT:
    rc = acked(r, put_range(idx, 0, next_state(r), 100, 20, 2));
    if (rc == TERN_OK) rc = acked(r, put_range(idx, 0, next_state(r), 0, 20, 3));
    break;
  case SC_FLUSH:
    rc = tern_flush(idx);
    if (rc == TERN_OK) rc = acked(r, put_range(idx, 0, next_state(r), 120, 5, 2));
    break;
  case SC_MERGE:
    for (uint32_t i = 0; rc == TERN_OK && i < 3; i++) {
      rc = acked(r, put_range(idx, 0, next_state(r), 130 + i * 5, 5, 2));
      if (rc == TERN_OK) rc = tern_flush(idx); /* the segments merge as they pile up */
    }
    break;
  case SC_COMPACT:
    rc = tern_compact(idx);
    if (rc == TERN_OK) rc = acked(r, put_range(idx, 0, next_state(r), 50, 5, 4));
    break;
  case SC_BACKUP: {
    tern_snapshot *s;
    rc = tern_snapshot_open(&s, idx);
    if (rc == TERN_OK) {
      r->backed_up = tern_backup(s, dest) == TERN_OK;
      tern_snapshot_close(s);
    }
    break;
  }
  default:
    break;
  }
  int crc = tern_close(idx);
  if (crc != TERN_OK) fprintf(stderr, "close after the power cut: %d %s\n", crc, tern_errmsg());
  assert_int_equal(crc, TERN_OK);
}

/* Whether the index holds exactly m. */
static int holds(tern_index *idx, const model *m) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  int same = 1;
  for (uint32_t id = 0; same && id < NK; id++) {
    uint8_t key[ET_KEY_MAX], want[128], got[128];
    size_t kl = et_key(id, SALT, key), vl = 0;
    int rc = tern_get(s, key, kl, got, sizeof got, &vl);
    if (rc != TERN_OK && rc != TERN_NOTFOUND) {
      fprintf(stderr, "get %u: %d %s\n", id, rc, tern_errmsg());
      fail();
    }
    if (!m->ver[id]) {
      same = rc == TERN_NOTFOUND;
    } else {
      size_t wl = value_of(id, m->ver[id], want);
      same = rc == TERN_OK && vl == wl && memcmp(got, want, wl) == 0;
    }
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  return same;
}

/* After the reboot: opens dir (with TERN_CREATE unless the creation was
 * acknowledged) and checks it holds acked[r->acked] or a later state. */
static int check_index(const char *dir, const run *r, unsigned flags, const char *what) {
  tern_options o = options();
  tern_index *idx = NULL;
  int rc = tern_open(&idx, dir, flags, &o);
  if (rc != TERN_OK) {
    fprintf(stderr, "%s: reopen %s: %d %s\n", what, dir, rc, tern_errmsg());
    return 0;
  }
  int vrc = tern_verify(idx), ok = vrc == TERN_OK;
  if (!ok) fprintf(stderr, "%s: verify %d %s\n", what, vrc, tern_errmsg());
  int found = 0;
  for (int i = r->acked; ok && !found && i < r->nstates; i++) found = holds(idx, &r->states[i]);
  if (ok && !found) fprintf(stderr, "%s: an acknowledged commit is lost\n", what);
  assert_int_equal(tern_close(idx), TERN_OK);
  return ok && found;
}

static void copy_dir(const char *from, const char *to) {
  tu_rmtree(to);
  assert_int_equal(mkdir(to, 0755), 0);
  DIR *d = opendir(from);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strstr(e->d_name, "-lock") || !strcmp(e->d_name, "write.lock"))
      continue;
    char *a = tu_path(from, e->d_name), *b = tu_path(to, e->d_name);
    size_t len;
    uint8_t *buf = tu_read_file(a, &len);
    tu_write_file(b, buf, len);
    free(buf);
    free(a);
    free(b);
  }
  closedir(d);
}

/* The index the non-creating scenarios start from: two segments and a
 * buffer.  *m its state. */
static void build_base(const char *dir, model *m) {
  tern_options o = options();
  tern_index *idx;
  memset(m, 0, sizeof *m);
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o), TERN_OK);
  assert_int_equal(put_range(idx, 0, m, 0, 40, 1), TERN_OK);
  assert_int_equal(tern_flush(idx), TERN_OK);
  assert_int_equal(put_range(idx, 0, m, 40, 40, 1), TERN_OK);
  assert_int_equal(tern_flush(idx), TERN_OK);
  assert_int_equal(put_range(idx, 0, m, 80, 20, 1), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
}

typedef struct tally {
  uint64_t rounds, lost;
} tally;

/* One power cut at sync n; returns whether it happened. */
static int round_of(enum scen sc, const char *root, const char *base, const model *start,
                    uint64_t n, int torn, tally *t) {
  char *dir = tu_path(root, "ix"), *dest = tu_path(root, "ix.bak");
  tu_rmtree(dir);
  tu_rmtree(dest);
  run r;
  memset(&r, 0, sizeof r);
  r.nstates = 1;
  if (sc == SC_CREATE || sc == SC_IMPORT)
    memset(&r.states[0], 0, sizeof r.states[0]);
  else
    copy_dir(base, dir), r.states[0] = *start;
  ff_reset();
  ff_crash_at_sync(n, torn, tu_seed() ^ n);
  play(sc, dir, dest, &r);
  int fired = ff_fired();
  ff_power_loss();
  char what[96];
  snprintf(what, sizeof what, "%s, %scrash at sync %llu", sc_name[sc], torn ? "torn " : "",
           (unsigned long long)n);
  int creating = sc == SC_CREATE || sc == SC_IMPORT;
  unsigned flags = creating && !r.created ? TERN_CREATE : 0;
  int ok = check_index(dir, &r, flags, what);
  if (ok && r.backed_up) {
    char bwhat[128];
    snprintf(bwhat, sizeof bwhat, "%s (the backup)", what);
    ok = check_index(dest, &r, 0, bwhat);
  }
  t->rounds++;
  t->lost += !ok;
  free(dir);
  free(dest);
  return fired;
}

static void test_strict_power_loss(void **state) {
  (void)state;
  char *root = tu_tmpdir("powerloss");
  char *base = tu_path(root, "base");
  model start;
  build_base(base, &start);
  tally t = {0};
  ff_install();
  ff_strict(1);
  for (int sc = 0; sc < NSC; sc++) {
    uint64_t before = t.rounds, lost = t.lost;
    for (int torn = 0; torn < 2; torn++)
      for (uint64_t n = 1; n < 2000 && round_of((enum scen)sc, root, base, &start, n, torn, &t);)
        n++;
    print_message("%-18s %4llu crash images, %llu with an acknowledged commit lost\n",
                  sc_name[sc], (unsigned long long)(t.rounds - before),
                  (unsigned long long)(t.lost - lost));
  }
  ff_strict(0);
  ff_uninstall();
  tu_rmtree(root);
  free(base);
  free(root);
  assert_int_equal(t.lost, 0);
}

/* Every call of a creation fails once: the next tern_open(TERN_CREATE)
 * finishes or replaces what it left, and the index is sound and empty. */
static void test_creation_cut_short(void **state) {
  (void)state;
  char *root = tu_tmpdir("powerloss-create");
  char *dir = tu_path(root, "ix");
  static const ff_kind kinds[] = {FF_OPEN, FF_WRITE, FF_SYNC, FF_RENAME, FF_CAT_WRITE,
                                  FF_CAT_SYNC};
  static const int errs[] = {EIO, ENOSPC};
  uint64_t rounds = 0, failed_opens = 0, refused = 0;
  ff_install();
  ff_strict(1);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (int e = 0; e < 2; e++)
      for (uint64_t n = 1; n < 500; n++) {
        tu_rmtree(dir);
        ff_reset();
        ff_fail_nth(kinds[k], n, errs[e]);
        tern_options o = options();
        tern_index *idx = NULL;
        int rc = tern_open(&idx, dir, TERN_CREATE, &o);
        int fired = ff_fired();
        if (rc == TERN_OK) assert_int_equal(tern_close(idx), TERN_OK);
        ff_reset();
        rounds++;
        failed_opens += rc != TERN_OK;
        /* What the failure left: no command may call it corrupt, and a
         * creation finishes it. */
        rc = tern_open(&idx, dir, TERN_CREATE, &o);
        if (rc != TERN_OK) {
          fprintf(stderr, "%s #%llu (%s): the next create fails: %d %s\n", ff_kind_name[kinds[k]],
                  (unsigned long long)n, strerror(errs[e]), rc, tern_errmsg());
          refused++;
        } else {
          model empty;
          memset(&empty, 0, sizeof empty);
          assert_int_equal(tern_verify(idx), TERN_OK);
          assert_true(holds(idx, &empty));
          assert_int_equal(tern_close(idx), TERN_OK);
        }
        if (!fired) break;
      }
  ff_strict(0);
  ff_uninstall();
  print_message("creation faults: %llu rounds, %llu failed creations, %llu left a directory "
                "the next create refused\n",
                (unsigned long long)rounds, (unsigned long long)failed_opens,
                (unsigned long long)refused);
  tu_rmtree(root);
  free(dir);
  free(root);
  assert_true(failed_opens > 0);
  assert_int_equal(refused, 0);
}

/* What a cut-short creation leaves (a partial catalog.mdb.new) is no
 * index to every open, and TERN_CREATE replaces it. */
static void test_leftover_is_no_index(void **state) {
  (void)state;
  char *dir = tu_tmpdir("powerloss-leftover");
  char *tmp = tu_path(dir, "catalog.mdb.new");
  uint8_t junk[8192];
  memset(junk, 0xab, sizeof junk);
  tu_write_file(tmp, junk, sizeof junk);
  tern_index *idx = NULL;
  assert_int_equal(tern_open(&idx, dir, 0, NULL), TERN_ENOTINDEX);
  assert_int_equal(tern_open(&idx, dir, TERN_RDONLY, NULL), TERN_ENOTINDEX);
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  model m;
  memset(&m, 0, sizeof m);
  assert_int_equal(put_range(idx, 0, &m, 0, 5, 1), TERN_OK);
  ET_OK(tern_close(idx));
  struct stat st;
  assert_int_equal(stat(tmp, &st), -1); /* renamed into place */
  ET_OK(tern_open(&idx, dir, 0, NULL));
  assert_true(holds(idx, &m));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(tmp);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strict_power_loss),
      cmocka_unit_test(test_creation_cut_short),
      cmocka_unit_test(test_leftover_is_no_index),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

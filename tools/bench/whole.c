/* SPDX-License-Identifier: MIT */
/*
 * whole.c — whole-process lookups: `tern get DIR -` against an LMDB reader
 * doing the same work (tern-bench lmdb-get), both fed the same key list on
 * standard input and writing the same bytes on standard output.
 *
 *   tern-bench lmdb-get DIR       the reader: for each line of stdin (the
 *                                 key before the first TAB, escaped as in
 *                                 tern's TSV), mdb_get, then `key<TAB>value`
 *                                 escaped on stdout or `not found: KEY` on
 *                                 stderr; exit 0 all found, 1 some missing
 *   tern-bench whole [options]    builds both stores from one key set
 *                                 (`tern import` of a TSV file; LMDB loaded
 *                                 in order), writes sampled present and
 *                                 absent key lists, warms both, then times
 *                                 fresh processes of each side in turn; the
 *                                 first present run's outputs must be equal
 *                                 byte for byte (LMDB is the reference)
 *
 * Values are printable (the doc id in decimal, then letters), so neither
 * side pays for escapes the other does not.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/coldbatch.h"
#include "tools/bench/keys_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"
#include "tools/bench/process.h"

#include "tools/tern/escape.c"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int tern_bench_lmdb_get(int argc, char **argv);
void tern_bench_lmdb_get_usage(FILE *out);
int tern_bench_whole(int argc, char **argv);
void tern_bench_whole_usage(FILE *out);

/* ------------------------------------------------------------ the reader */

typedef struct lmdb_get_opts {
  int nordahead;
  const char *dir;
} lmdb_get_opts;

static const bench_opt k_lmdb_get_opts[] = {
    BENCH_FLAG("nordahead", offsetof(lmdb_get_opts, nordahead), 1, 0,
               "open with MDB_NORDAHEAD (default: LMDB's readahead)"),
};

static const bench_cmd k_lmdb_get_cmd = {
    .name = "lmdb-get",
    .synopsis = "[--nordahead] DIR",
    .summary = "LMDB's `tern get DIR -`: keys on stdin, key<TAB>value out",
    .opts = k_lmdb_get_opts,
    .nopts = BENCH_NOPTS(k_lmdb_get_opts),
    .struct_size = sizeof(lmdb_get_opts),
    .positional = "DIR",
    .pos_off = offsetof(lmdb_get_opts, dir)};

void tern_bench_lmdb_get_usage(FILE *out) { bench_opts_usage(&k_lmdb_get_cmd, out); }

static void put_escaped(FILE *f, const void *p, size_t n, char *buf) {
  fwrite(buf, 1, esc_encode(p, n, buf), f);
}

int tern_bench_lmdb_get(int argc, char **argv) {
  lmdb_get_opts o;
  int prc = bench_opts_parse(&k_lmdb_get_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  char msg[256];
  bench_lmdb l;
  if (bench_lmdb_open(&l, o.dir, o.nordahead, msg, sizeof msg) != 0) {
    fprintf(stderr, "lmdb-get: %s\n", msg);
    return 2;
  }
  static char obuf[1 << 20], ebuf[1 << 16], enc[ESC_ENCODED_MAX(1u << 20)];
  setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
  setvbuf(stderr, ebuf, _IOFBF, sizeof ebuf); /* as tern's buffered error stream */
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  int status = 0;
  while ((got = getline(&line, &cap, stdin)) >= 0) {
    size_t len = (size_t)got;
    if (len && line[len - 1] == '\n') len--;
    char *tab = memchr(line, '\t', len);
    if (tab) len = (size_t)(tab - line);
    if (len == 0) continue;
    esc_error err;
    size_t klen;
    if (esc_decode(line, len, line, &klen, &err) != 0 || klen == 0 || klen > 1024) {
      fprintf(stderr, "lmdb-get: bad key\n");
      status = 2;
      break;
    }
    MDB_val k = {klen, line}, v;
    int rc = mdb_get(l.txn, l.dbi, &k, &v);
    if (rc == 0) {
      put_escaped(stdout, line, klen, enc);
      putc('\t', stdout);
      if (v.mv_size <= sizeof obuf) put_escaped(stdout, v.mv_data, v.mv_size, enc);
      putc('\n', stdout);
    } else if (rc == MDB_NOTFOUND) {
      fputs("not found: ", stderr);
      put_escaped(stderr, line, klen, enc);
      putc('\n', stderr);
      status = status ? status : 1;
    } else {
      fprintf(stderr, "lmdb-get: %s\n", mdb_strerror(rc));
      status = 2;
      break;
    }
  }
  free(line);
  bench_lmdb_close(&l);
  if (fflush(stdout) != 0) status = 2;
  fflush(stderr);
  return status;
}

/* ------------------------------------------------------------ the driver */

typedef struct whole_opts {
  bench_key_spec spec;
  uint64_t docs, values, lookups, runs, seed;
  const char *parent, *tern;
  int keep;
} whole_opts;

#define WHOLE_OPT(field) offsetof(whole_opts, field)
static const bench_opt k_whole_opts[] = {
    BENCH_U64("docs", WHOLE_OPT(docs), "N", "1000000", 1, UINT32_MAX - 1,
              "keys indexed (a file's keys: at most N)"),
    BENCH_CUSTOM("keys", WHOLE_OPT(spec), bench_opt_key_spec, "SHAPE", "random",
                 "as tern-bench pk"),
    BENCH_U64("values", WHOLE_OPT(values), "BYTES", "4", 1, 1u << 20, "value size"),
    BENCH_U64("lookups", WHOLE_OPT(lookups), "N", "1000000", 1, 0,
              "keys per process (sampled with repeats past the set)"),
    BENCH_U64("runs", WHOLE_OPT(runs), "R", "5", 1, 0,
              "processes per side and key list, alternating\n"
              "which side goes first; medians"),
    BENCH_STR("tern", WHOLE_OPT(tern), "PATH", NULL, "the tern tool (next to tern-bench)"),
    BENCH_SCRATCH_DIR(WHOLE_OPT(parent)),
    BENCH_U64("seed", WHOLE_OPT(seed), "S", "0x77686f6c65" /* "whole" */, 0, 0, "key seed"),
    BENCH_FLAG("keep", WHOLE_OPT(keep), 1, 0, "keep the scratch directory"),
};

static const bench_cmd k_whole_cmd =
    BENCH_CMD("whole", "[options]", "warm whole-process lookups: `tern get DIR -` vs lmdb-get",
              k_whole_opts, whole_opts, NULL);

void tern_bench_whole_usage(FILE *out) { bench_opts_usage(&k_whole_cmd, out); }

/* A printable value of doc: its id in decimal, then letters. */
static void printable_value(uint8_t *out, uint32_t doc, size_t vbytes) {
  char id[16];
  int n = snprintf(id, sizeof id, "%010u", doc);
  for (size_t i = 0; i < vbytes; i++)
    out[i] = i < (size_t)n ? (uint8_t)id[(size_t)n - (vbytes < (size_t)n ? vbytes : (size_t)n) + i]
                           : (uint8_t)('a' + (doc + i) % 26);
}

static int write_import(const char *path, const bench_keys *k, size_t vbytes) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  char *enc = malloc(ESC_ENCODED_MAX(BENCH_FILE_KEY_MAX + vbytes) + 1);
  uint8_t *v = malloc(vbytes + 1);
  int rc = enc && v ? 0 : -ENOMEM;
  for (size_t i = 0; rc == 0 && i < k->n; i++) {
    fwrite(enc, 1, esc_encode(bench_key_at(k, i), bench_key_len(k, i), enc), f);
    putc('\t', f);
    printable_value(v, (uint32_t)i, vbytes);
    fwrite(enc, 1, esc_encode(v, vbytes, enc), f);
    putc('\n', f);
  }
  if (fclose(f) != 0 && rc == 0) rc = -errno;
  free(enc);
  free(v);
  return rc;
}

static int write_keys(const char *path, const bench_keys *k, const uint32_t *idx, size_t n) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  char enc[ESC_ENCODED_MAX(BENCH_FILE_KEY_MAX)];
  for (size_t i = 0; i < n; i++) {
    fwrite(enc, 1, esc_encode(bench_key_at(k, idx[i]), bench_key_len(k, idx[i]), enc), f);
    putc('\n', f);
  }
  return fclose(f) != 0 ? -errno : 0;
}

/* posix_spawn, not fork: a fork copies the page tables of this process,
 * which holds the key set (hundreds of MB at 10M keys), and that copy
 * would be timed as the child's cost. */
int bench_run_process_io(char *const *argv, const char *in, const char *out, double *s,
                         double *read_bytes) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  int rc = posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0) ||
           posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644) ||
           posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  double t0 = bench_now();
  pid_t pid;
  if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0) return -1;
  *s = bench_now() - t0;
  *read_bytes = (double)ru.ru_inblock * 512.0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int bench_run_process(char *const *argv, const char *in, const char *out, double *s) {
  double bytes;
  return bench_run_process_io(argv, in, out, s, &bytes);
}

static int files_equal(const char *a, const char *b) {
  FILE *f = fopen(a, "r"), *g = fopen(b, "r");
  int eq = f && g;
  while (eq) {
    int x = getc(f), y = getc(g);
    if (x != y) eq = 0;
    if (x == EOF) break;
  }
  if (f) fclose(f);
  if (g) fclose(g);
  return eq;
}

int bench_self_exe(char *buf, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
  if (n <= 0) return -1;
  buf[n] = 0;
  return 0;
}

void bench_default_tern(char *buf, size_t cap) {
  if (bench_self_exe(buf, cap - 8) != 0) {
    snprintf(buf, cap, "tern");
    return;
  }
  char *slash = strrchr(buf, '/');
  snprintf(slash ? slash + 1 : buf, cap - (size_t)(slash ? slash + 1 - buf : 0), "tern");
}

typedef struct whole_env {
  char tern[4096], self[4096], tdir[4096], ldir[4096];
  char in[2][4096], out[2][4096];
} whole_env;

typedef struct whole_run {
  const whole_opts *o;
  whole_env *w;
} whole_run;

/* ns per key of one process of `side` (0 tern get, 1 lmdb-get) on key list
 * `which` (0 present: every key found, exit 0; 1 absent: exit 1).  The
 * first present round keeps both outputs, to be compared. */
static double time_side(void *ctx, size_t side, size_t which, size_t round) {
  whole_run *x = ctx;
  whole_env *w = x->w;
  char *targv[] = {w->tern, "get", w->tdir, "-", NULL};
  char *largv[] = {w->self, "lmdb-get", w->ldir, NULL};
  const char *out = round == 0 && which == 0 ? w->out[side] : "/dev/null";
  double s = 0;
  int st = bench_run_process(side ? largv : targv, w->in[which], out, &s);
  if (st != (int)which) {
    bench_log("whole: %s exited %d (expected %d)", side ? "lmdb-get" : "tern get", st, (int)which);
    return -1;
  }
  return s * 1e9 / (double)x->o->lookups;
}

static void report_sides(const char *what, const bench_rounds *r, size_t which) {
  bench_summary c = bench_rounds_ratios(r, which, 1, 0);
  printf("  %-8s tern get %7.1f ns/key  lmdb-get %7.1f ns/key  LMDB/tern %.2fx (%.2f .. %.2f)\n",
         what, bench_rounds_median(r, 0, which), bench_rounds_median(r, 1, which), c.median, c.min,
         c.max);
}

/* Times both sides on both key lists and reports. */
static int whole_measure(const whole_opts *o, whole_env *w, const bench_keys *k) {
  whole_run x = {o, w};
  bench_rounds r = {.contenders = 2, .measures = 2, .rounds = (size_t)o->runs};
  int rc = bench_rounds_run(&r, time_side, NULL, &x);
  if (rc == 0 && !files_equal(w->out[0], w->out[1])) {
    bench_log("whole: the outputs of tern get and lmdb-get differ (%s, %s)", w->out[0], w->out[1]);
    rc = -1;
  }
  if (rc == 0) {
    printf("bytes: tern %.2f B/key, lmdb %.2f B/key\n",
           (double)bench_dir_bytes(w->tdir) / (double)k->n,
           (double)bench_dir_bytes(w->ldir) / (double)k->n);
    report_sides("present", &r, 0);
    report_sides("absent", &r, 1);
  }
  bench_rounds_free(&r);
  return rc;
}

static int whole_build(const whole_opts *o, whole_env *w, const char *dir, bench_keys *k) {
  char tsv[4096], msg[256];
  bench_path(tsv, sizeof tsv, dir, "import.tsv");
  int rc = write_import(tsv, k, (size_t)o->values);
  if (rc) {
    bench_log("whole: writing %s: %s", tsv, strerror(-rc));
    return -1;
  }
  char *iargv[] = {w->tern, "import", "-q", w->tdir, tsv, NULL};
  double s;
  if ((rc = bench_run_process(iargv, "/dev/null", "/dev/null", &s)) != 0) {
    bench_log("whole: %s import exited %d", w->tern, rc);
    return -1;
  }
  bench_log("tern import: %.1f s", s);
  unlink(tsv);
  if (bench_keys_sort(k) != 0) return -1;
  if (bench_lmdb_build_fn(w->ldir, k, (size_t)o->values, printable_value, msg, sizeof msg) != 0) {
    bench_log("whole: LMDB: %s", msg);
    return -1;
  }
  return 0;
}

/* The tools' paths and the scratch directory's files; the directory
 * (malloc'd), or NULL. */
static char *whole_env_init(whole_env *w, const whole_opts *o) {
  if (o->tern)
    snprintf(w->tern, sizeof w->tern, "%s", o->tern);
  else
    bench_default_tern(w->tern, sizeof w->tern);
  if (bench_self_exe(w->self, sizeof w->self) != 0) return NULL;
  char *dir = bench_mkdtemp(o->parent, "tern-whole");
  if (!dir) return NULL;
  bench_path(w->tdir, sizeof w->tdir, dir, "tern");
  bench_path(w->ldir, sizeof w->ldir, dir, "lmdb");
  bench_path(w->in[0], sizeof w->in[0], dir, "present.keys");
  bench_path(w->in[1], sizeof w->in[1], dir, "absent.keys");
  bench_path(w->out[0], sizeof w->out[0], dir, "tern.out");
  bench_path(w->out[1], sizeof w->out[1], dir, "lmdb.out");
  return dir;
}

int tern_bench_whole(int argc, char **argv) {
  whole_opts o;
  int prc = bench_opts_parse(&k_whole_cmd, &o, argc, argv);
  if (prc) return bench_opts_exit(prc);
  static whole_env w;
  char *dir = whole_env_init(&w, &o);
  if (!dir) return 1;
  bench_keys k = {0}, a = {0};
  uint32_t *pi = malloc(o.lookups * sizeof *pi), *ai = malloc(o.lookups * sizeof *ai);
  int ret = 1;
  int krc = pi && ai ? bench_keys_load(&k, &o.spec, (size_t)o.docs, o.seed) : -ENOMEM;
  if (krc == 0) krc = bench_keys_absent(&a, &k, k.n < o.lookups ? k.n : (size_t)o.lookups, o.seed);
  if (krc) {
    bench_log("whole: keys: %s", strerror(-krc));
    goto out;
  }
  bench_print_header(argc, argv);
  printf("# keys %s%s%s: %zu, mean %.1f bytes; values %llu bytes; %llu keys per "
         "process, %llu runs, warm\n",
         bench_key_shape_name(o.spec.shape), o.spec.path ? ":" : "", o.spec.path ? o.spec.path : "",
         k.n, bench_keys_mean_len(&k), (unsigned long long)o.values, (unsigned long long)o.lookups,
         (unsigned long long)o.runs);
  if (whole_build(&o, &w, dir, &k) != 0) goto out;
  bench_rng rng;
  bench_rng_init(&rng, o.seed ^ 0x100cull);
  if (bench_sample(&rng, k.n, (size_t)o.lookups, pi) || bench_sample(&rng, a.n, (size_t)o.lookups, ai) ||
      write_keys(w.in[0], &k, pi, (size_t)o.lookups) || write_keys(w.in[1], &a, ai, (size_t)o.lookups))
    goto out;
  bench_warm_dir(dir);
  if (whole_measure(&o, &w, &k) != 0) goto out;
  ret = 0;
out:
  bench_keys_free(&k);
  bench_keys_free(&a);
  free(pi);
  free(ai);
  if (o.keep) printf("# kept %s\n", dir);
  else bench_rmtree(dir);
  free(dir);
  return ret;
}

/* ------------------------------------------- stores for tern-bench cold-batch */

int bench_whole_build_at(const char *dir, const bench_key_spec *spec, uint64_t docs,
                         uint64_t values, uint64_t lookups, uint64_t seed, const char *tern) {
  static whole_env w;
  whole_opts o = {.spec = *spec, .docs = docs, .values = values, .lookups = lookups, .seed = seed};
  snprintf(w.tern, sizeof w.tern, "%s", tern);
  bench_path(w.tdir, sizeof w.tdir, dir, "tern");
  bench_path(w.ldir, sizeof w.ldir, dir, "lmdb");
  bench_path(w.in[0], sizeof w.in[0], dir, "present.keys");
  bench_keys k = {0};
  uint32_t *pi = malloc(lookups * sizeof *pi);
  int rc = pi && bench_mkdirs(dir) == 0 ? bench_keys_load(&k, spec, (size_t)docs, seed) : -1;
  if (rc == 0) rc = whole_build(&o, &w, dir, &k);
  /* One segment, as LMDB's one tree: an import over its memory bound
   * leaves several, and each overlapping one costs a cold key a read. */
  char *cargv[] = {w.tern, "compact", w.tdir, NULL};
  double s;
  if (rc == 0 && bench_run_process(cargv, "/dev/null", "/dev/null", &s) != 0) rc = -1;
  bench_rng rng;
  bench_rng_init(&rng, seed ^ 0x100cull);
  /* present.keys last: its presence says the stores are whole */
  if (rc == 0 && (bench_sample(&rng, k.n, (size_t)lookups, pi) != 0 ||
                  write_keys(w.in[0], &k, pi, (size_t)lookups) != 0))
    rc = -1;
  if (rc != 0) bench_log("cold-batch: building the stores in %s failed", dir);
  bench_keys_free(&k);
  free(pi);
  return rc ? -1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * pk_measure.c — the measurements of `tern-bench pk` (see pk.c): opening
 * and reading each store, a timed batch of verified lookups, the cold
 * phase (every store evicted before each batch, the raw 4 KiB reads of the
 * largest file as the baseline) and the warm phase.
 */
#include "tools/bench/pk.h"

#include "codec/io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ stores */

const char *const pk_phase_names[NPHASES] = {"cold-present", "cold-absent", "warm-present",
                                             "warm-absent"};

static int store_open(pk_store *s, char *msg, size_t cap) {
  if (s->kind == STORE_LMDB) return bench_lmdb_open(&s->lmdb, s->dir, s->nordahead, msg, cap);
  int rc = tern_open(&s->idx, s->dir, TERN_RDONLY | (s->pread ? TERN_PREAD : 0u), NULL);
  if (rc == TERN_OK) {
    rc = tern_snapshot_open(&s->snap, s->idx);
    if (rc != TERN_OK) {
      tern_close(s->idx);
      s->idx = NULL;
    }
  }
  if (rc != TERN_OK)
    snprintf(msg, cap, "%.300s: %s (%.150s)", s->dir, tern_strerror(rc), tern_errmsg());
  return rc;
}

void pk_store_close(pk_store *s) {
  if (s->kind == STORE_LMDB) {
    bench_lmdb_close(&s->lmdb);
    return;
  }
  if (s->snap) tern_snapshot_close(s->snap);
  if (s->idx) tern_close(s->idx);
  s->snap = NULL;
  s->idx = NULL;
}

/* The value size of this run (both stores copy the value out, as a
 * caller keeping it would). */
size_t pk_values = 4;
uint8_t pk_vbuf[1u << 20];

/* 0 found (*doc set), 1 absent, < 0 an error. */
static int store_get(pk_store *s, const uint8_t *key, size_t len, uint32_t *doc) {
  uint8_t *buf = pk_vbuf;
  size_t vlen = 0;
  if (s->kind == STORE_LMDB) {
    const uint8_t *v;
    int rc = bench_lmdb_get_value(&s->lmdb, key, len, doc, &v, &vlen);
    if (rc == 0 && vlen == pk_values) memcpy(buf, v, vlen);
    return rc == 0 ? (vlen == pk_values ? 0 : -1) : rc == MDB_NOTFOUND ? 1 : -1;
  }
  int rc = tern_get(s->snap, key, len, buf, pk_values, &vlen);
  if (rc == TERN_NOTFOUND) return 1;
  if (rc != TERN_OK || vlen != pk_values) return -1;
  *doc = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
  return 0;
}

static pk_row *rows_add(pk_rows *r) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    pk_row *v = realloc(r->v, cap * sizeof *v);
    if (!v) return NULL;
    r->v = v;
    r->cap = cap;
  }
  pk_row *row = &r->v[r->n++];
  memset(row, 0, sizeof *row);
  return row;
}

/* A new row of store s, phase and run; NULL without memory. */
static pk_row *new_row(pk_rows *rows, size_t s, int phase, uint64_t run) {
  pk_row *row = rows_add(rows);
  if (row) {
    row->store = s;
    row->phase = phase;
    row->run = (int)run;
  }
  return row;
}

/* A batch of lookups: indices into `keys`; present ones expect their index
 * as doc id, absent ones expect no answer. */
typedef struct pk_batch {
  const bench_keys *keys;
  const uint32_t *idx;
  size_t n;
  int present;
  /* The keys in lookup order (batch_stream): a lookup reads its key from
   * the next bytes, as a caller holding it would, not from a random place
   * of the key set (two cache misses that both stores paid and that
   * diluted their ratio). */
  bench_key_stream ks;
} pk_batch;

static int batch_stream(pk_batch *b) {
  return bench_key_stream_fill(&b->ks, b->keys, b->idx, b->n);
}

static void batch_stream_free(pk_batch *b) { bench_key_stream_free(&b->ks); }

static int g_first_error_logged;

/* Runs the batch against an open store and fills the row's lookup part. */
static void run_batch(pk_store *s, const pk_batch *b, pk_row *row, const char *label) {
  bench_io a, z, d;
  uint64_t errors = 0;
  bench_io_take(&a);
  double t0 = bench_now();
  for (size_t i = 0; i < b->n; i++) {
    uint32_t want = b->idx[i], doc = 0;
    int rc = store_get(s, bench_stream_key(&b->ks, i), bench_stream_len(&b->ks, i), &doc);
    int ok = b->present ? rc == 0 && doc == want : rc == 1;
    if (!ok) {
      errors++;
      if (!g_first_error_logged) {
        g_first_error_logged = 1;
        bench_log("  ERROR: %s: %s key #%u: %s", s->name, b->present ? "present" : "absent", want,
                  rc < 0    ? (s->kind == STORE_TERN ? tern_errmsg() : "LMDB error")
                  : rc == 1 ? "not found"
                            : "wrong doc id");
      }
    }
    if ((i & 4095) == 4095) bench_progress(label, i + 1, b->n);
  }
  double t1 = bench_now();
  bench_io_take(&z);
  bench_progress_done();
  bench_io_diff(&a, &z, &d);
  row->n = b->n;
  row->total_ms = (t1 - t0) * 1e3;
  row->reads = d.tern_reads;
  row->majflt = d.majflt;
  row->read_bytes = d.read_bytes;
  row->verified = b->n - errors;
  row->errors = errors;
}

/* Evict, open, run, close: one cold measurement. */
static int cold_batch(pk_store *s, const pk_batch *b, bench_evict_method m, pk_row *row,
                      const char *label) {
  char msg[512];
  uint64_t resident = 0;
  int rc = bench_evict_dir(s->dir, m, &resident);
  if (rc) {
    bench_log("tern-bench pk: evicting %s: %s", s->dir, strerror(-rc));
    return -1;
  }
  bench_io a, z, d;
  bench_io_take(&a);
  double t0 = bench_now();
  if (store_open(s, msg, sizeof msg) != 0) {
    bench_log("tern-bench pk: opening %s: %s", s->name, msg);
    return -1;
  }
  double t1 = bench_now();
  bench_io_take(&z);
  bench_io_diff(&a, &z, &d);
  run_batch(s, b, row, label);
  pk_store_close(s);
  row->open_ms = (t1 - t0) * 1e3;
  row->open_reads = d.tern_reads;
  row->open_read_bytes = d.read_bytes;
  row->resident = resident;
  return 0;
}

/* ------------------------------------------------------------ phases */

/* One random 4 KiB pread per lookup from `raw` after eviction: the price
 * of the single read a cold lookup needs at best, on the same disk in the
 * same run. */
static int raw_reads(const char *raw, uint64_t n, uint64_t run, const pk_opts *o, pk_rows *base) {
  pk_row *row = rows_add(base);
  if (!row) return -1;
  double secs = 0;
  uint64_t rb = 0;
  int rc = bench_random_reads(raw, n, o->seed ^ bench_mix64(run * 7919u + n), &secs, &rb);
  if (rc) {
    bench_log("tern-bench pk: random reads of %s: %s", raw, strerror(-rc));
    return -1;
  }
  row->phase = PHASE_COLD_PRESENT;
  row->run = (int)run;
  row->n = n;
  row->total_ms = secs * 1e3;
  row->read_bytes = rb;
  row->verified = n;
  return 0;
}

int pk_cold_phase(pk_store *stores, size_t ns, const bench_keys *present, const bench_keys *absent,
                  const pk_opts *o, pk_rows *rows, const char *raw, pk_rows *base) {
  size_t maxn = 0;
  for (size_t i = 0; i < o->nlookups; i++)
    if (o->lookups[i] > maxn) maxn = o->lookups[i];
  uint32_t *pidx = malloc(maxn * sizeof *pidx), *aidx = malloc(maxn * sizeof *aidx);
  int rc = pidx && aidx ? 0 : -1;
  for (uint64_t run = 1; rc == 0 && run <= o->runs; run++) {
    for (size_t i = 0; rc == 0 && i < o->nlookups; i++) {
      uint64_t n = o->lookups[i];
      bench_rng rng;
      bench_rng_init(&rng, o->seed ^ bench_mix64(run * 1000003u + n));
      if (bench_sample(&rng, present->n, n, pidx) || bench_sample(&rng, absent->n, n, aidx)) {
        rc = -1;
        break;
      }
      bench_log("cold run %llu/%llu, N=%llu", (unsigned long long)run, (unsigned long long)o->runs,
                (unsigned long long)n);
      for (size_t s = 0; rc == 0 && s < ns; s++) {
        for (int phase = PHASE_COLD_PRESENT; rc == 0 && phase <= PHASE_COLD_ABSENT; phase++) {
          pk_batch b = {.keys = phase == PHASE_COLD_PRESENT ? present : absent,
                        .idx = phase == PHASE_COLD_PRESENT ? pidx : aidx,
                        .n = n,
                        .present = phase == PHASE_COLD_PRESENT};
          pk_row *row = new_row(rows, s, phase, run);
          if (!row || batch_stream(&b) != 0) {
            batch_stream_free(&b);
            rc = -1;
            break;
          }
          char label[96];
          snprintf(label, sizeof label, "%s %s N=%llu", stores[s].name, pk_phase_names[phase],
                   (unsigned long long)n);
          rc = cold_batch(&stores[s], &b, o->evict, row, label);
          batch_stream_free(&b);
          if (rc == 0 && row->resident > 0)
            bench_log("  note: %s: %llu pages still resident after eviction", stores[s].name,
                      (unsigned long long)row->resident);
        }
      }
      if (rc == 0 && raw[0]) rc = raw_reads(raw, n, run, o, base);
    }
  }
  free(pidx);
  free(aidx);
  return rc;
}

/* The stores in `pick` open at once, each warmed by an untimed pass; then
 * run by run, each store in turn answers the same lookups, so that the
 * ratios of one run compare stores measured within seconds of each other
 * (the machine is shared: its speed drifts between runs). */
static int warm_group(pk_store *stores, size_t ns, const unsigned char *pick,
                      const bench_keys *present, const bench_keys *absent, const pk_opts *o,
                      pk_rows *rows) {
  size_t n = o->warm;
  uint32_t *pidx = malloc(n * sizeof *pidx), *aidx = malloc(n * sizeof *aidx);
  pk_batch b[2] = {{.keys = present, .idx = pidx, .n = n, .present = 1},
                   {.keys = absent, .idx = aidx, .n = n, .present = 0}};
  int rc = pidx && aidx ? 0 : -1;
  bench_rng rng;
  bench_rng_init(&rng, o->seed ^ 0x5741524Dull);
  if (rc == 0 && (bench_sample(&rng, present->n, n, pidx) || batch_stream(&b[0]) != 0)) rc = -1;
  for (size_t s = 0; rc == 0 && s < ns; s++) {
    if (!pick[s]) continue;
    char msg[512];
    bench_log("warm: %s", stores[s].name);
    if (bench_warm_dir(stores[s].dir) != 0 || store_open(&stores[s], msg, sizeof msg) != 0) {
      bench_log("tern-bench pk: warming %s failed %s", stores[s].name, msg);
      rc = -1;
      break;
    }
    /* One untimed pass maps every page this process will touch. */
    pk_row scratch;
    memset(&scratch, 0, sizeof scratch);
    run_batch(&stores[s], &b[0], &scratch, "warm-up");
  }
  for (uint64_t run = 1; rc == 0 && run <= o->runs; run++) {
    batch_stream_free(&b[0]);
    batch_stream_free(&b[1]);
    bench_rng_init(&rng, o->seed ^ bench_mix64(0x5741524Dull + run));
    if (bench_sample(&rng, present->n, n, pidx) || bench_sample(&rng, absent->n, n, aidx) ||
        batch_stream(&b[0]) != 0 || batch_stream(&b[1]) != 0) {
      rc = -1;
      break;
    }
    for (size_t s = 0; rc == 0 && s < ns; s++) {
      for (int phase = PHASE_WARM_PRESENT; pick[s] && phase <= PHASE_WARM_ABSENT; phase++) {
        pk_row *row = new_row(rows, s, phase, run);
        if (!row) {
          rc = -1;
          break;
        }
        char label[96];
        snprintf(label, sizeof label, "%s %s run %llu", stores[s].name, pk_phase_names[phase],
                 (unsigned long long)run);
        run_batch(&stores[s], &b[phase - PHASE_WARM_PRESENT], row, label);
      }
    }
  }
  for (size_t s = 0; s < ns; s++)
    if (pick[s]) pk_store_close(&stores[s]);
  batch_stream_free(&b[0]);
  batch_stream_free(&b[1]);
  free(pidx);
  free(aidx);
  return rc;
}

/* LMDB must not have one environment open twice in a process (closing one
 * drops the other's locks): the LMDB stores reading a file another LMDB
 * store reads too run in a second group, after the first. */
/* Two LMDB stores on one file (they are never open at once).  Out of line:
 * inlined, gcc 12 -O3 doubts the bounds of the stores array. */
static __attribute__((noinline)) int same_lmdb_file(const pk_store *a, const pk_store *b) {
  return a->kind == STORE_LMDB && b->kind == STORE_LMDB && strcmp(a->dir, b->dir) == 0;
}

int pk_warm_phase(pk_store *stores, size_t ns, const bench_keys *present, const bench_keys *absent,
                  const pk_opts *o, pk_rows *rows) {
  if (o->warm == 0) return 0;
  unsigned char first[8] = {0}, second[8] = {0};
  int more = 0;
  for (size_t s = 0; s < ns && s < sizeof first; s++) {
    int shared = 0;
    for (size_t t = 0; t < s; t++)
      shared |= same_lmdb_file(&stores[s], &stores[t]);
    first[s] = !shared;
    second[s] = (unsigned char)shared;
    more |= shared;
  }
  int rc = warm_group(stores, ns, first, present, absent, o, rows);
  if (rc == 0 && more) rc = warm_group(stores, ns, second, present, absent, o, rows);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * coldbatch_inproc.c — tern-bench cold-batch's in-process sides: the cold
 * batch of tern, LMDB's gets and the device's own random reads, each in
 * the benchmark process itself, so that none pays a process's start
 * (exec, dynamic loading, opening the store) and they compare on equal
 * terms.  Each side opens its store first (not timed), then every file of
 * both stores is evicted (fdatasync + POSIX_FADV_DONTNEED), then the
 * lookups alone are timed.  What a side read: the process's rusage
 * (ru_inblock, all its threads: io_uring's workers too), and the file
 * layer's counted reads (tern, device) or major faults (LMDB).
 */
#include "tools/bench/coldbatch.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/lmdb_common.h"
#include "tools/tern/escape.h"

#include "codec/io.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

int cb_keys_read(cb_keys *k, const char *path, uint64_t n) {
  memset(k, 0, sizeof *k);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t cap = 1u << 16, used = 0;
  k->buf = malloc(cap);
  k->k = malloc((size_t)n * sizeof *k->k);
  size_t *offs = malloc((size_t)n * sizeof *offs);
  char line[8192];
  int rc = k->buf && k->k && offs ? 0 : -1;
  while (!rc && k->n < n && fgets(line, sizeof line, f)) {
    size_t len = strcspn(line, "\t\n"), klen;
    esc_error err;
    if (used + len + 1 > cap) {
      while (used + len + 1 > cap) cap *= 2;
      char *b = realloc(k->buf, cap);
      if (!b) break;
      k->buf = b;
    }
    if (len == 0 || esc_decode(line, len, k->buf + used, &klen, &err) != 0) {
      rc = -1;
      break;
    }
    offs[k->n] = used;
    k->k[k->n++].len = klen;
    used += klen;
  }
  fclose(f);
  for (size_t i = 0; !rc && i < k->n; i++) k->k[i].data = k->buf + offs[i];
  free(offs);
  if (!rc && k->n < n) rc = -1;
  if (rc) cb_keys_free(k);
  return rc;
}

void cb_keys_free(cb_keys *k) {
  free(k->k);
  free(k->buf);
  memset(k, 0, sizeof *k);
}

void cb_evict_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[4096];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int n = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof p) continue; /* a path too long to be ours */
    (void)tern_io_evict_path(p);
  }
  closedir(d);
}

/* The process's storage reads, major faults and CPU seconds so far. */
typedef struct usage {
  double in, majflt, cpu;
} usage;

static usage usage_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (usage){(double)ru.ru_inblock * 512.0, (double)ru.ru_majflt,
                 (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6};
}

static void usage_into(cb_sample *out, usage a, usage b) {
  out->mb = (b.in - a.in) / 1e6;
  out->cpu = b.cpu - a.cpu;
}

typedef struct found {
  size_t ok, calls;
} found;

static int count_found(void *payload, size_t i, int status, const void *val, size_t vlen) {
  found *f = payload;
  (void)i, (void)val, (void)vlen;
  f->calls++;
  f->ok += status == TERN_OK;
  return 0;
}

int cb_inproc_tern(const char *tdir, const char *ldir, const cb_keys *k, cb_sample *out) {
  tern_index *idx;
  tern_snapshot *s = NULL;
  if (tern_open(&idx, tdir, TERN_RDONLY, NULL) != TERN_OK) {
    fprintf(stderr, "cold-batch: %s\n", tern_errmsg());
    return -1;
  }
  int rc = tern_snapshot_open(&s, idx);
  cb_evict_dir(tdir);
  cb_evict_dir(ldir);
  found f = {0, 0};
  tern_io_stats io;
  tern_io_reset_global_stats();
  usage u0 = usage_now();
  double t0 = bench_now();
  if (rc == TERN_OK) rc = tern_get_batch(s, k->k, k->n, count_found, &f);
  out->s = bench_now() - t0;
  usage_into(out, u0, usage_now());
  tern_io_global_stats(&io);
  if (rc != TERN_OK || f.ok != k->n) {
    fprintf(stderr, "cold-batch: tern_get_batch: %s (%zu of %zu found)\n",
            rc ? tern_errmsg() : "ok", f.ok, k->n);
    rc = -1;
  }
  out->reads = (double)io.reads;
  if (s) tern_snapshot_close(s);
  tern_close(idx);
  return rc ? -1 : 0;
}

int cb_inproc_lmdb(const char *ldir, const char *tdir, const cb_keys *k, int nordahead,
                   cb_sample *out) {
  bench_lmdb l;
  char msg[256];
  if (bench_lmdb_open(&l, ldir, nordahead, msg, sizeof msg) != 0) {
    fprintf(stderr, "cold-batch: LMDB: %s\n", msg);
    return -1;
  }
  cb_evict_dir(tdir);
  cb_evict_dir(ldir);
  size_t ok = 0;
  usage u0 = usage_now();
  double t0 = bench_now();
  for (size_t i = 0; i < k->n; i++) {
    MDB_val key = {k->k[i].len, (void *)k->k[i].data}, v;
    ok += mdb_get(l.txn, l.dbi, &key, &v) == 0;
  }
  out->s = bench_now() - t0;
  usage u1 = usage_now();
  bench_lmdb_close(&l);
  usage_into(out, u0, u1);
  out->reads = u1.majflt - u0.majflt;
  if (ok != k->n) {
    fprintf(stderr, "cold-batch: LMDB found %zu of %zu keys\n", ok, k->n);
    return -1;
  }
  return 0;
}

/* The queue's reads: up to depth in flight, each buffer reused only once
 * its read's completion is taken (tags name buffers). */
static int queued_reads(tern_rfile *f, tern_rqueue *q, uint64_t n, unsigned depth, bench_rng *r,
                        uint8_t *buf) {
  uint64_t pages = tern_rfile_size(f) / TERN_IO_PAGE;
  unsigned *free_bufs = malloc(depth * sizeof *free_bufs), nfree = depth;
  if (!free_bufs) return -1;
  for (unsigned i = 0; i < depth; i++) free_bufs[i] = i;
  int rc = 0;
  for (uint64_t sent = 0, done = 0; !rc && done < n;) {
    while (!rc && sent < n && nfree) {
      unsigned b = free_bufs[--nfree];
      uint64_t off = bench_rng_below(r, pages) * TERN_IO_PAGE;
      rc = tern_rqueue_submit(q, f, off, TERN_IO_PAGE, buf + (size_t)b * TERN_IO_PAGE, b) ? -1 : 0;
      sent++;
    }
    uint64_t tag;
    if (!rc && tern_rqueue_wait(q, &tag) == TERN_OK) {
      free_bufs[nfree++] = (unsigned)tag;
      done++;
    } else {
      rc = -1;
    }
  }
  free(free_bufs);
  return rc;
}

int cb_device_reads(const char *path, uint64_t n, unsigned depth, uint64_t seed, cb_sample *out) {
  tern_rfile *f;
  if (tern_rfile_open(&f, path, TERN_IO_PREAD) != TERN_OK) return -1;
  uint64_t pages = tern_rfile_size(f) / TERN_IO_PAGE;
  bench_rng r;
  bench_rng_init(&r, seed);
  uint8_t *buf = malloc((size_t)depth * TERN_IO_PAGE);
  tern_rqueue *q = NULL;
  int rc = buf && pages ? 0 : -1;
  if (!rc && depth > 1) {
    tern_io_set_queue_kind(TERN_RQ_URING);
    rc = tern_rqueue_open(&q, depth) == TERN_OK ? 0 : -1;
  }
  (void)tern_rfile_evict(f);
  tern_io_stats io0, io1;
  tern_rfile_stats(f, &io0);
  usage u0 = usage_now();
  double t0 = bench_now();
  for (uint64_t i = 0; !rc && !q && i < n; i++) {
    const uint8_t *p;
    rc = tern_rfile_read(f, bench_rng_below(&r, pages) * TERN_IO_PAGE, TERN_IO_PAGE, buf, &p) ? -1 : 0;
  }
  if (!rc && q) rc = queued_reads(f, q, n, depth, &r, buf);
  out->s = bench_now() - t0;
  usage_into(out, u0, usage_now());
  tern_rfile_stats(f, &io1);
  out->reads = (double)(io1.reads - io0.reads);
  tern_rqueue_close(q);
  tern_io_set_queue_kind(TERN_RQ_AUTO);
  free(buf);
  tern_rfile_close(f);
  return rc;
}

int cb_store_dir(char *out, size_t cap, const char *from, const char *parent,
                 const bench_key_spec *spec, uint64_t docs, uint64_t values, uint64_t seed,
                 const char *tern) {
  if (from) {
    snprintf(out, cap, "%s", from);
    return 0;
  }
  snprintf(out, cap, "%s/cold-batch-%s-%llu", parent, bench_key_shape_name(spec->shape),
           (unsigned long long)docs);
  char keys[4200];
  snprintf(keys, sizeof keys, "%s/present.keys", out);
  struct stat st;
  if (stat(keys, &st) == 0) return 0;
  /* present.keys is written last: without it, a build was cut short */
  if (stat(out, &st) == 0) (void)bench_rmtree(out);
  bench_log("cold-batch: building %s", out);
  return bench_whole_build_at(out, spec, docs, values, CB_KEYS_MAX, seed, tern);
}

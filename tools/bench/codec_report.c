/* SPDX-License-Identifier: MIT */
/*
 * codec_report.c — part 1's outputs of `tern-bench codec`: the Markdown
 * header and primary-key section of codec.md (medians with min–max of the
 * runs per store, read mode and phase) and codec-pk.csv (every run).
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/codec.h"

#include <errno.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

const char *const codec_pk_phases[4] = {"warm-present", "warm-absent", "cold-present",
                                        "cold-absent"};

typedef double (*metric_fn)(const pk_result *);
static double m_ns(const pk_result *r) { return r->total_s * 1e9 / (double)r->n; }
static double m_reads(const pk_result *r) { return (double)r->reads / (double)r->n; }
static double m_pages(const pk_result *r) { return (double)r->read_bytes / 4096.0 / (double)r->n; }
static double m_majflt(const pk_result *r) { return (double)r->majflt / (double)r->n; }

static bench_summary med(const results *res, const char *store, const char *io, int phase,
                         metric_fn fn) {
  double *v = calloc(res->n + 1, sizeof *v);
  size_t k = 0;
  for (size_t i = 0; v && i < res->n; i++) {
    const pk_result *r = &res->v[i];
    if (!strcmp(r->store, store) && !strcmp(r->io, io) && r->phase == phase) v[k++] = fn(r);
  }
  bench_summary s = bench_summarize(v, k);
  free(v);
  return s;
}

void codec_md_header(FILE *f, const codec_opts *o, const char *cmdline, const char *work) {
  char machine[256];
  bench_machine(machine, sizeof machine);
  fprintf(f, "# tern-bench codec\n\n- command: `%s`\n- machine: %s\n", cmdline, machine);
  fprintf(f, "- storage: %s (%s), device read-ahead %ld KiB\n", work, bench_fs_name(work),
          bench_readahead_kb(work));
  fprintf(f,
          "- %llu unique random base36 keys (16 bytes), doc id = input position; %s "
          "value = 4-byte doc id, tern value empty (the doc id is the posting)\n",
          (unsigned long long)o->docs, MDB_VERSION_STRING);
  fprintf(f,
          "- cold: tern_seg_evict (segment stays open: its terms index and filter are in "
          "memory) / LMDB closed, files evicted with fdatasync + POSIX_FADV_DONTNEED, reopened; "
          "%llu lookups per run; warm: files read once, one untimed pass, then %llu lookups; "
          "medians of %llu runs (min–max)\n\n",
          (unsigned long long)o->cold, (unsigned long long)o->warm, (unsigned long long)o->runs);
}

void codec_md_pk(FILE *f, const codec_opts *o, pk_build *b, size_t nb, double lmdb_s,
                 uint64_t lmdb_bytes, const results *res) {
  double d = (double)o->docs;
  fprintf(f, "## Primary keys: build and size\n\n");
  fprintf(f, "| store | build s | .tim+.tix B/key | .doc B/key | terms+postings B/key | .flt B/key "
             "| all files B/key |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nb; i++)
    fprintf(f, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", b[i].store, b[i].build_s,
            (double)(b[i].z.tim + b[i].z.tix) / d, (double)b[i].z.doc / d,
            (double)(b[i].z.tim + b[i].z.tix + b[i].z.doc) / d, (double)b[i].z.flt / d,
            (double)b[i].z.all / d);
  fprintf(f, "| lmdb (sorted MDB_APPEND) | %.2f | – | – | – | – | %.2f |\n\n", lmdb_s,
          (double)lmdb_bytes / d);

  fprintf(f, "## Primary keys: warm seek (ns per lookup)\n\n");
  fprintf(f, "| store | io | present ns | vs LMDB | absent ns | vs LMDB |\n"
             "|---|---|---:|---:|---:|---:|\n");
  bench_summary lp = med(res, "lmdb-nordahead", "mmap", 0, m_ns);
  bench_summary la = med(res, "lmdb-nordahead", "mmap", 1, m_ns);
  const char *stores[] = {"tern-pulse1", "tern-pulse0", "lmdb-nordahead"};
  const char *ios[] = {"mmap", "mmap-nocheck", "pread", "pread-nocheck"};
  for (size_t si = 0; si < 3; si++) {
    for (size_t ii = 0; ii < 4; ii++) {
      bench_summary p = med(res, stores[si], ios[ii], 0, m_ns);
      bench_summary a = med(res, stores[si], ios[ii], 1, m_ns);
      if (p.n == 0) continue;
      if (a.n == 0) { /* the -nocheck rows: present keys only */
        fprintf(f, "| %s | %s | %.0f (%.0f–%.0f) | %.2f× | – | – |\n", stores[si], ios[ii],
                p.median, p.min, p.max, lp.median / p.median);
        continue;
      }
      fprintf(f, "| %s | %s | %.0f (%.0f–%.0f) | %.2f× | %.0f (%.0f–%.0f) | %.2f× |\n", stores[si],
              ios[ii], p.median, p.min, p.max, lp.median / p.median, a.median, a.min, a.max,
              la.median / a.median);
    }
  }
  fprintf(f, "\n## Primary keys: cold lookups after eviction (per lookup, medians)\n\n");
  fprintf(f, "| store | io | present µs | reads | 4 KiB pages | majflt | absent µs | reads | 4 KiB "
             "pages |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t si = 0; si < 3; si++) {
    for (size_t ii = 0; ii < 4; ii++) {
      bench_summary p = med(res, stores[si], ios[ii], 2, m_ns);
      if (p.n == 0) continue;
      bench_summary a = med(res, stores[si], ios[ii], 3, m_ns);
      int tern = si < 2;
      char pr[32] = "–", ar[32] = "–";
      if (tern) {
        snprintf(pr, sizeof pr, "%.3f", med(res, stores[si], ios[ii], 2, m_reads).median);
        snprintf(ar, sizeof ar, "%.3f", med(res, stores[si], ios[ii], 3, m_reads).median);
      }
      fprintf(f, "| %s | %s | %.1f | %s | %.2f | %.2f | %.1f | %s | %.2f |\n", stores[si], ios[ii],
              p.median / 1e3, pr, med(res, stores[si], ios[ii], 2, m_pages).median,
              med(res, stores[si], ios[ii], 2, m_majflt).median, a.median / 1e3, ar,
              med(res, stores[si], ios[ii], 3, m_pages).median);
    }
  }
  fprintf(f, "\n");
}

int codec_pk_csv(const char *path, const results *res) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,io,phase,n,run,total_ms,ns_per_lookup,reads_per_lookup,pages_per_lookup,"
             "majflt_per_lookup,errors\n");
  for (size_t i = 0; i < res->n; i++) {
    const pk_result *r = &res->v[i];
    fprintf(f, "%s,%s,%s,%llu,%d,%.3f,%.1f,", r->store, r->io, codec_pk_phases[r->phase],
            (unsigned long long)r->n, r->run, r->total_s * 1e3, m_ns(r));
    if (strncmp(r->store, "tern", 4) == 0)
      fprintf(f, "%.4f,", m_reads(r));
    else
      fprintf(f, "NA,");
    fprintf(f, "%.4f,%.4f,%llu\n", m_pages(r), m_majflt(r), (unsigned long long)r->errors);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

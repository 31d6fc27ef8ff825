/* SPDX-License-Identifier: MIT */
/*
 * pk_report.c — the outputs of `tern-bench pk` (see pk.c): results.csv,
 * build.csv, results.md (medians with min-max, ratios, target checks) and
 * the gnuplot script and data of cold-lookups.png.
 */
#include "tools/bench/pk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ reporting */

typedef struct pk_stat {
  bench_summary us, reads, majflt, rbytes, open_ms, open_kib;
  uint64_t verified, errors;
  size_t runs;
} pk_stat;

/* Medians over the runs of (store, phase, n); runs == 0 when none. */
static pk_stat stat_of(const pk_rows *r, size_t store, int phase, uint64_t n) {
  pk_stat st;
  memset(&st, 0, sizeof st);
  double *us = calloc(r->n + 1, sizeof(double)), *rd = calloc(r->n + 1, sizeof(double));
  double *mf = calloc(r->n + 1, sizeof(double)), *rb = calloc(r->n + 1, sizeof(double));
  double *om = calloc(r->n + 1, sizeof(double)), *ok = calloc(r->n + 1, sizeof(double));
  size_t k = 0;
  for (size_t i = 0; us && rd && mf && rb && om && ok && i < r->n; i++) {
    const pk_row *w = &r->v[i];
    if (w->store != store || w->phase != phase || w->n != n) continue;
    us[k] = w->total_ms * 1e3 / (double)w->n;
    rd[k] = (double)w->reads / (double)w->n;
    mf[k] = (double)w->majflt / (double)w->n;
    rb[k] = (double)w->read_bytes / (double)w->n;
    om[k] = w->open_ms;
    ok[k] = (double)w->open_read_bytes / 1024;
    st.verified += w->verified;
    st.errors += w->errors;
    k++;
  }
  st.runs = k;
  st.us = bench_summarize(us, k);
  st.reads = bench_summarize(rd, k);
  st.majflt = bench_summarize(mf, k);
  st.rbytes = bench_summarize(rb, k);
  st.open_ms = bench_summarize(om, k);
  st.open_kib = bench_summarize(ok, k);
  free(ok);
  free(us);
  free(rd);
  free(mf);
  free(rb);
  free(om);
  return st;
}

int pk_write_results_csv(const char *path, const pk_rows *r, pk_store *stores, const pk_opts *o) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,keys,phase,n,run,total_ms,us_per_lookup,reads_per_lookup,majflt_per_lookup,"
             "read_bytes_per_lookup,verified,errors,open_ms,open_reads,open_read_bytes,"
             "resident_pages_after_evict\n");
  for (size_t i = 0; i < r->n; i++) {
    const pk_row *w = &r->v[i];
    const pk_store *s = &stores[w->store];
    double n = (double)w->n;
    fprintf(f, "%s,%s,%s,%llu,%d,%.3f,%.4f,", s->name, bench_key_shape_name(o->spec.shape),
            pk_phase_names[w->phase], (unsigned long long)w->n, w->run, w->total_ms,
            w->total_ms * 1e3 / n);
    if (s->kind == STORE_TERN)
      fprintf(f, "%.4f,", (double)w->reads / n);
    else
      fprintf(f, "NA,");
    fprintf(f, "%.4f,%.1f,%llu,%llu,%.3f,", (double)w->majflt / n, (double)w->read_bytes / n,
            (unsigned long long)w->verified, (unsigned long long)w->errors, w->open_ms);
    if (s->kind == STORE_TERN)
      fprintf(f, "%llu,", (unsigned long long)w->open_reads);
    else
      fprintf(f, "NA,");
    fprintf(f, "%llu,%llu\n", (unsigned long long)w->open_read_bytes,
            (unsigned long long)w->resident);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

int pk_write_build_csv(const char *path, pk_store *stores, size_t nstores, const pk_opts *o) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "store,keys,docs,segments_requested,segments,build_s,sort_s,bytes,bytes_per_key,"
             "terms_bytes,index_bytes,postings_bytes,filter_bytes,values_bytes,segment_bytes\n");
  for (size_t i = 0; i < nstores; i++) {
    const pk_store *s = &stores[i];
    fprintf(f, "%s,%s,%llu,%llu,%llu,%.3f,%.3f,%llu,%.3f,%llu,%llu,%llu,%llu,%llu,%llu\n", s->name,
            bench_key_shape_name(o->spec.shape), (unsigned long long)o->docs,
            (unsigned long long)(s->kind == STORE_TERN ? o->segments : 1),
            (unsigned long long)s->segments, s->build_s, s->sort_s, (unsigned long long)s->bytes,
            (double)s->bytes / (double)o->docs, (unsigned long long)s->b_terms,
            (unsigned long long)s->b_index, (unsigned long long)s->b_postings,
            (unsigned long long)s->b_filter, (unsigned long long)s->b_values,
            (unsigned long long)s->b_segments);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static void fmt_range(char *buf, size_t cap, const bench_summary *s, const char *fmt) {
  char a[32], b[32], c[32];
  snprintf(a, sizeof a, fmt, s->median);
  snprintf(b, sizeof b, fmt, s->min);
  snprintf(c, sizeof c, fmt, s->max);
  if (s->n <= 1)
    snprintf(buf, cap, "%s", a);
  else
    snprintf(buf, cap, "%s (%s–%s)", a, b, c);
}

static const char *fmt_ratio(char *buf, size_t cap, double num, double den) {
  if (den <= 0 || num <= 0)
    snprintf(buf, cap, "–");
  else
    snprintf(buf, cap, "%.2f×", num / den);
  return buf;
}

static size_t find_store(pk_store *stores, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(stores[i].name, name)) return i;
  return n;
}

static void md_build(FILE *f, pk_store *stores, size_t ns, const pk_opts *o) {
  double d = (double)o->docs;
  fprintf(f, "## Build and size\n\n");
  fprintf(f,
          "| store | build s | segments | bytes on disk | B/key | terms (.tim) B/key | "
          "index (.tix) B/key | postings (.doc) B/key | terms+postings B/key | filter B/key |\n");
  fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < ns; i++) {
    pk_store *s = &stores[i];
    if (s->kind == STORE_LMDB && !s->built_here) continue;
    const char *name = s->kind == STORE_LMDB ? "lmdb (both flag sets, one file)" : s->name;
    if (s->kind == STORE_TERN) {
      fprintf(f, "| %s | %.2f | %llu | %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name,
              s->build_s, (unsigned long long)s->segments, (unsigned long long)s->bytes,
              (double)s->bytes / d, (double)s->b_terms / d, (double)s->b_index / d,
              (double)s->b_postings / d, (double)(s->b_terms + s->b_index + s->b_postings) / d,
              (double)s->b_filter / d);
    } else {
      fprintf(f, "| %s | %.2f (sort %.2f) | – | %llu | %.2f | – | – | – | – | – |\n", name,
              s->build_s, s->sort_s, (unsigned long long)s->bytes, (double)s->bytes / d);
    }
  }
  size_t l = find_store(stores, ns, "lmdb-nordahead"), t = find_store(stores, ns, "tern-pulse1");
  if (l < ns && t < ns)
    fprintf(f, "\ntern-pulse1 bytes on disk per key vs LMDB: %.2f× (target ≤ 0.5×).\n",
            (double)stores[t].bytes / (double)stores[l].bytes);
  for (size_t i = 0; i < ns; i++)
    if (stores[i].kind == STORE_TERN && stores[i].segments != o->segments)
      fprintf(f, "\nNote: %s: %llu bulk commits left %llu segments (the engine merged them).\n",
              stores[i].name, (unsigned long long)o->segments,
              (unsigned long long)stores[i].segments);
  fprintf(f, "\n");
}

static void md_cold(FILE *f, const pk_rows *r, const pk_rows *base, const char *raw,
                    pk_store *stores, size_t ns, const pk_opts *o, int phase) {
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  int with_base = base && base->n;
  fprintf(f, "## %s: %s keys after eviction\n\n", pk_phase_names[phase],
          phase == PHASE_COLD_PRESENT ? "present" : "absent");
  fprintf(f, "µs per lookup: median of %llu runs (min–max).", (unsigned long long)o->runs);
  if (with_base)
    fprintf(f,
            " Last column: one random 4 KiB pread per lookup from `%s` after eviction (the "
            "same disk, in the same run): the price of the one read a cold lookup needs at "
            "best.",
            strrchr(raw, '/') ? strrchr(raw, '/') + 1 : raw);
  fprintf(f, "\n\n| N |");
  for (size_t s = 0; s < ns; s++)
    fprintf(f, " %s |", stores[s].name);
  if (with_base) fprintf(f, " one 4 KiB pread |");
  fprintf(f, "\n|---:|");
  for (size_t s = 0; s < ns + (size_t)with_base; s++)
    fprintf(f, "---:|");
  fprintf(f, "\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    fprintf(f, "| %llu |", (unsigned long long)o->lookups[i]);
    for (size_t s = 0; s <= ns; s++) {
      if (s == ns && !with_base) break;
      pk_stat st = s < ns ? stat_of(r, s, phase, o->lookups[i])
                          : stat_of(base, 0, PHASE_COLD_PRESENT, o->lookups[i]);
      char buf[128];
      fmt_range(buf, sizeof buf, &st.us, "%.1f");
      fprintf(f, " %s |", buf);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\nPer lookup (medians): codec reads (tern), major faults, KiB fetched from disk "
             "(/proc/self/io read_bytes); speedup = LMDB-NORDAHEAD µs / store µs.\n\n");
  fprintf(f, "| N | store | µs | speedup vs lmdb-nordahead | reads | majflt | KiB read | 4 KiB "
             "pages read | open ms | open KiB read | verified | errors |\n");
  fprintf(f, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    pk_stat ref = l < ns ? stat_of(r, l, phase, o->lookups[i]) : (pk_stat){0};
    for (size_t s = 0; s < ns; s++) {
      pk_stat st = stat_of(r, s, phase, o->lookups[i]);
      char ratio[32], reads[32];
      if (stores[s].kind == STORE_TERN)
        snprintf(reads, sizeof reads, "%.3f", st.reads.median);
      else
        snprintf(reads, sizeof reads, "–");
      fprintf(f,
              "| %llu | %s | %.1f | %s | %s | %.3f | %.1f | %.2f | %.1f | %.0f | %llu | %llu |\n",
              (unsigned long long)o->lookups[i], stores[s].name, st.us.median,
              fmt_ratio(ratio, sizeof ratio, ref.us.median, st.us.median), reads, st.majflt.median,
              st.rbytes.median / 1024, st.rbytes.median / 4096, st.open_ms.median,
              st.open_kib.median, (unsigned long long)st.verified, (unsigned long long)st.errors);
    }
  }
  fprintf(f, "\n");
}

/* The ratios `base` time / `store` time of each run of a phase (the two
 * measured back to back, warm_phase), summarized. */
static bench_summary paired_ratio(const pk_rows *r, size_t store, size_t base, int phase,
                                  uint64_t n) {
  double *v = calloc(r->n + 1, sizeof(double));
  size_t k = 0;
  for (size_t i = 0; v && i < r->n; i++) {
    const pk_row *w = &r->v[i];
    if (w->store != store || w->phase != phase || w->n != n || w->total_ms <= 0) continue;
    for (size_t j = 0; j < r->n; j++) {
      const pk_row *x = &r->v[j];
      if (x->store == base && x->phase == phase && x->n == n && x->run == w->run)
        v[k++] = x->total_ms / w->total_ms;
    }
  }
  bench_summary s = bench_summarize(v, k);
  free(v);
  return s;
}

static void md_warm(FILE *f, const pk_rows *r, pk_store *stores, size_t ns, const pk_opts *o) {
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  fprintf(f, "## Warm: every file in the page cache\n\n");
  fprintf(f,
          "%llu present and %llu absent lookups per run; ns per lookup, median of %llu runs "
          "(min–max); speedup = LMDB-NORDAHEAD ns / store ns of the medians; paired: the "
          "median (min–max) of each run's ratio, the stores measured back to back in each "
          "run (LMDB with read-ahead, which reads the other LMDB store's file, in a second "
          "pass).\n\n",
          (unsigned long long)o->warm, (unsigned long long)o->warm, (unsigned long long)o->runs);
  fprintf(f, "| store | present ns | speedup | paired | absent ns | speedup | paired | errors |\n");
  fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  pk_stat bp = stat_of(r, l, PHASE_WARM_PRESENT, o->warm);
  pk_stat ba = stat_of(r, l, PHASE_WARM_ABSENT, o->warm);
  for (size_t s = 0; s < ns; s++) {
    pk_stat p = stat_of(r, s, PHASE_WARM_PRESENT, o->warm);
    pk_stat a = stat_of(r, s, PHASE_WARM_ABSENT, o->warm);
    bench_summary pn = p.us, an = a.us;
    pn.median *= 1e3, pn.min *= 1e3, pn.max *= 1e3;
    an.median *= 1e3, an.min *= 1e3, an.max *= 1e3;
    char pb[128], ab[128], r1[32], r2[32], q1[128] = "–", q2[128] = "–";
    fmt_range(pb, sizeof pb, &pn, "%.0f");
    fmt_range(ab, sizeof ab, &an, "%.0f");
    bench_summary pp = paired_ratio(r, s, l, PHASE_WARM_PRESENT, o->warm);
    bench_summary pa = paired_ratio(r, s, l, PHASE_WARM_ABSENT, o->warm);
    if (l < ns && pp.n) fmt_range(q1, sizeof q1, &pp, "%.2f×");
    if (l < ns && pa.n) fmt_range(q2, sizeof q2, &pa, "%.2f×");
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %llu |\n", stores[s].name, pb,
            fmt_ratio(r1, sizeof r1, bp.us.median, p.us.median), q1, ab,
            fmt_ratio(r2, sizeof r2, ba.us.median, a.us.median), q2,
            (unsigned long long)(p.errors + a.errors));
  }
  fprintf(f, "\n");
}

/* The project's targets, checked against this run's medians. */
static void md_targets(FILE *f, const pk_rows *r, const pk_rows *base, pk_store *stores, size_t ns,
                       const pk_opts *o) {
  size_t t1 = find_store(stores, ns, "tern-pulse1"), t0 = find_store(stores, ns, "tern-pulse0");
  size_t l = find_store(stores, ns, "lmdb-nordahead");
  if (t1 >= ns || t0 >= ns || l >= ns) return;
  fprintf(f, "## Targets (checked on this run's medians)\n\n");
  fprintf(f, "| N | pulse1 vs pulse0 speedup (≥1.8× at N≤10k) | reads pulse1 / pulse0 (1 / 2) | "
             "pulse1 vs LMDB-NORDAHEAD speedup (≥1.5× at N≤10k) | KiB read pulse1 / LMDB "
             "(fewer) | pulse1 µs / one 4 KiB pread µs (≤1.2× at N≤1k) |\n"
             "|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    uint64_t n = o->lookups[i];
    pk_stat a = stat_of(r, t1, PHASE_COLD_PRESENT, n), b = stat_of(r, t0, PHASE_COLD_PRESENT, n);
    pk_stat c = stat_of(r, l, PHASE_COLD_PRESENT, n);
    pk_stat raw = base ? stat_of(base, 0, PHASE_COLD_PRESENT, n) : (pk_stat){0};
    char r1[32], r2[32], r3[32];
    fprintf(f, "| %llu | %s | %.3f / %.3f | %s | %.1f / %.1f | %s |\n", (unsigned long long)n,
            fmt_ratio(r1, sizeof r1, b.us.median, a.us.median), a.reads.median, b.reads.median,
            fmt_ratio(r2, sizeof r2, c.us.median, a.us.median), a.rbytes.median / 1024,
            c.rbytes.median / 1024, fmt_ratio(r3, sizeof r3, a.us.median, raw.us.median));
  }
  pk_stat wp1 = stat_of(r, t1, PHASE_WARM_PRESENT, o->warm),
          wpl = stat_of(r, l, PHASE_WARM_PRESENT, o->warm);
  pk_stat wa1 = stat_of(r, t1, PHASE_WARM_ABSENT, o->warm),
          wal = stat_of(r, l, PHASE_WARM_ABSENT, o->warm);
  char r1[32], r2[32];
  fprintf(f,
          "\nWarm, tern-pulse1 vs LMDB-NORDAHEAD: present %s (target ≥3×), absent %s (target "
          "≥5×).\n",
          fmt_ratio(r1, sizeof r1, wpl.us.median, wp1.us.median),
          fmt_ratio(r2, sizeof r2, wal.us.median, wa1.us.median));
  double d = (double)o->docs;
  fprintf(f,
          "Bytes on disk per key: tern-pulse1 %.2f, LMDB %.2f (ratio %.2f×, target ≤0.5×); "
          "tern-pulse1 terms+postings %.2f B/key (target < 14.19).\n\n",
          (double)stores[t1].bytes / d, (double)stores[l].bytes / d,
          (double)stores[t1].bytes / (double)stores[l].bytes,
          (double)(stores[t1].b_terms + stores[t1].b_index + stores[t1].b_postings) / d);
}

int pk_write_results_md(const char *path, const pk_rows *r, const pk_rows *base, const char *raw,
                        pk_store *stores, size_t ns, const pk_opts *o, const char *cmdline,
                        const char *workdir) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  char machine[256];
  bench_machine(machine, sizeof machine);
  long ra = bench_readahead_kb(workdir);
  fprintf(f, "# tern-bench pk: %s keys, %llu docs\n\n", bench_key_shape_name(o->spec.shape),
          (unsigned long long)o->docs);
  fprintf(f, "- command: `%s`\n", cmdline);
  fprintf(f, "- machine: %s\n", machine);
  fprintf(f, "- storage: %s (%s), device read-ahead %ld KiB\n", workdir, bench_fs_name(workdir),
          ra);
  fprintf(f,
          "- eviction before every cold measurement: %s, then a fresh open "
          "(tern_open TERN_RDONLY + snapshot; mdb_env_open MDB_RDONLY)\n",
          bench_evict_method_text(o->evict));
  fprintf(f,
          "- values: %llu bytes, the doc id (input position, 4 bytes LE) then filler; every "
          "answer verified\n",
          (unsigned long long)o->values);
  char inl[64] = "default";
  if (o->inl.set) snprintf(inl, sizeof inl, "%llu", (unsigned long long)o->inl.v);
  fprintf(f,
          "- tern %s (pulsing threshold 1 and 0, inline value limit %s, other options default), "
          "%s\n\n",
          tern_version(), inl, MDB_VERSION_STRING);
  md_build(f, stores, ns, o);
  md_cold(f, r, base, raw, stores, ns, o, PHASE_COLD_PRESENT);
  md_cold(f, r, NULL, NULL, stores, ns, o, PHASE_COLD_ABSENT);
  md_warm(f, r, stores, ns, o);
  md_targets(f, r, base, stores, ns, o);
  return fclose(f) == 0 ? 0 : -errno;
}

/* cold-lookups.dat / .gp / .png in `out`.  1 when the PNG was made. */
int pk_write_plot(const char *out, const pk_rows *r, const pk_rows *base, pk_store *stores,
                  size_t ns, const pk_opts *o) {
  char path[4096];
  FILE *f = fopen(bench_path(path, sizeof path, out, "cold-lookups.dat"), "w");
  if (!f) return 0;
  fprintf(f, "# N");
  for (size_t s = 0; s < ns; s++)
    fprintf(f, " %s", stores[s].name);
  if (base->n) fprintf(f, " one-4KiB-pread");
  fprintf(f, "   (median us per cold present lookup)\n");
  for (size_t i = 0; i < o->nlookups; i++) {
    fprintf(f, "%llu", (unsigned long long)o->lookups[i]);
    for (size_t s = 0; s < ns; s++)
      fprintf(f, " %.3f", stat_of(r, s, PHASE_COLD_PRESENT, o->lookups[i]).us.median);
    if (base->n) fprintf(f, " %.3f", stat_of(base, 0, PHASE_COLD_PRESENT, o->lookups[i]).us.median);
    fprintf(f, "\n");
  }
  fclose(f);
  f = fopen(bench_path(path, sizeof path, out, "cold-lookups.gp"), "w");
  if (!f) return 0;
  fprintf(f,
          "# Generated by tern-bench pk; run in the output directory: gnuplot cold-lookups.gp\n"
          "set terminal pngcairo size 960,600 enhanced font ',11'\n"
          "set output 'cold-lookups.png'\n"
          "set logscale xy\nset grid xtics ytics mxtics mytics\n"
          "set xlabel 'N random present lookups after eviction'\n"
          "set ylabel 'µs per lookup (median of %llu runs)'\n"
          "set title 'Cold primary-key lookups, %llu %s keys'\n"
          "set key top right\nset format x '10^{%%L}'\n"
          "plot ",
          (unsigned long long)o->runs, (unsigned long long)o->docs,
          bench_key_shape_name(o->spec.shape));
  for (size_t s = 0; s < ns; s++)
    fprintf(f, "%s'cold-lookups.dat' using 1:%zu with linespoints lw 2 title '%s'",
            s ? ", \\\n  " : "", s + 2, stores[s].name);
  if (base->n)
    fprintf(f,
            ", \\\n  'cold-lookups.dat' using 1:%zu with lines dt 2 lw 2 lc 'black' title 'one "
            "random 4 KiB pread'",
            ns + 2);
  fprintf(f, "\n");
  fclose(f);
  if (!bench_have_program("gnuplot")) return 0;
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    if (chdir(out) != 0) _exit(127);
    execlp("gnuplot", "gnuplot", "cold-lookups.gp", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
  return access(bench_path(path, sizeof path, out, "cold-lookups.png"), R_OK) == 0;
}

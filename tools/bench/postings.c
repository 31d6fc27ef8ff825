/* SPDX-License-Identifier: MIT */
/*
 * postings.c — `tern-bench postings`: the speed of the postings format,
 * each figure next to a varint baseline measured in the same run.
 *
 *  1. blocks:  decoding 128 doc gaps of a given bit width from a packed
 *              block (tern_unpack + prefix sum) vs from 128 LEB128 varints.
 *  2. iterate: next() over a whole term of --docs ids read from a real
 *              framed .doc file (mmap mode, warm), vs an iterator decoding
 *              the same gaps as varints from memory, one call per doc as
 *              tern's (what a varint-only postings format would cost at
 *              best: no I/O layer, no checks).
 *  3. advance: advance() to every k-th doc (k = 8 .. 100,000), using the
 *              skip data, vs advancing the varint baseline by next().
 *
 * Every figure is the median of --runs runs; ratios are baseline / tern.
 */
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"

#include "codec/bitpack.h"
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/postings.h"
#include "tern.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define PB_SEED 0x706f7374ull /* "post" */

typedef struct pb_opts {
  uint64_t docs, runs, gap;
  const char *dir;
} pb_opts;

static volatile uint64_t sink;

void tern_bench_postings_usage(FILE *out) {
  fprintf(out, "tern-bench postings [options] — postings decode, iteration and advance speed,\n"
               "against a varint baseline in the same run\n"
               "  --docs N     doc ids of the iterated term (default 1M)\n"
               "  --gap G      mean gap between doc ids, uniform in [1, 2G-1] (default 16)\n"
               "  --runs R     runs per figure; medians are printed (default 5)\n"
               "  --dir D      directory for the scratch .doc file (default $TMPDIR or /tmp)\n");
}

static int parse(int argc, char **argv, pb_opts *o) {
  static const struct option longs[] = {
      {"docs", required_argument, 0, 'n'}, {"gap", required_argument, 0, 'g'},
      {"runs", required_argument, 0, 'r'}, {"dir", required_argument, 0, 'd'},
      {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
  const char *tmp = getenv("TMPDIR");
  *o = (pb_opts){.docs = 1000000, .runs = 5, .gap = 16, .dir = tmp && *tmp ? tmp : "/tmp"};
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case 'n':
      if (bench_parse_u64(optarg, &o->docs) || o->docs < 1 || o->docs > 100000000) return -1;
      break;
    case 'g':
      if (bench_parse_u64(optarg, &o->gap) || o->gap < 1 || o->gap > 1000) return -1;
      break;
    case 'r':
      if (bench_parse_u64(optarg, &o->runs) || o->runs < 1 || o->runs > 100) return -1;
      break;
    case 'd': o->dir = optarg; break;
    case 'h': tern_bench_postings_usage(stdout); return 1;
    default: return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ 1. blocks */

NOIPA static uint64_t decode_packed(const uint8_t *blocks, size_t nblocks, unsigned w) {
  uint32_t v[TERN_POSTINGS_BLOCK];
  uint64_t sum = 0, doc = 0;
  const size_t size = tern_packed_size(TERN_POSTINGS_BLOCK, w);
  for (size_t b = 0; b < nblocks; b++) {
    tern_unpack(v, blocks + b * size, TERN_POSTINGS_BLOCK, w);
    for (unsigned i = 0; i < TERN_POSTINGS_BLOCK; i++) {
      doc += v[i] + 1;
      sum += doc;
    }
  }
  return sum;
}

NOIPA static uint64_t decode_varints(const uint8_t *p, const uint8_t *end, size_t n) {
  uint64_t sum = 0, doc = 0, gap;
  for (size_t i = 0; i < n && tern_get_varint(&p, end, &gap) == 0; i++) {
    doc += gap + 1;
    sum += doc;
  }
  return sum;
}

static void bench_blocks(const pb_opts *o, bench_rng *r) {
  enum { NB = 4096 };
  static const unsigned widths[] = {1, 4, 7, 8, 12, 16, 20, 24, 32};
  printf("\n## 1. block decode: 128 gaps of width w (ns per doc, %d blocks, median of %llu)\n\n",
         NB, (unsigned long long)o->runs);
  printf("| width | packed | varint | varint / packed |\n|---|---|---|---|\n");
  uint32_t *gaps = malloc(sizeof(uint32_t) * TERN_POSTINGS_BLOCK * NB);
  uint8_t *packed = malloc(512 * (size_t)NB), *var = malloc(5 * TERN_POSTINGS_BLOCK * (size_t)NB);
  double *tp = malloc(sizeof(double) * o->runs), *tv = malloc(sizeof(double) * o->runs);
  for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
    const unsigned w = widths[k];
    const size_t n = (size_t)TERN_POSTINGS_BLOCK * NB,
                 size = tern_packed_size(TERN_POSTINGS_BLOCK, w);
    size_t vlen = 0;
    for (size_t i = 0; i < n; i++) {
      gaps[i] = (uint32_t)(bench_rng_next(r) >> (64 - w)) | 1u << (w - 1);
      vlen += tern_put_varint(var + vlen, gaps[i]);
    }
    for (size_t b = 0; b < NB; b++)
      tern_pack(packed + b * size, gaps + b * TERN_POSTINGS_BLOCK, TERN_POSTINGS_BLOCK, w);
    for (uint64_t run = 0; run < o->runs; run++) {
      double t0 = bench_now();
      uint64_t a = decode_packed(packed, NB, w);
      double t1 = bench_now();
      uint64_t b = decode_varints(var, var + vlen, n);
      double t2 = bench_now();
      if (a != b) bench_log("postings bench: decoders disagree at width %u\n", w);
      sink += a;
      tp[run] = (t1 - t0) * 1e9 / (double)n;
      tv[run] = (t2 - t1) * 1e9 / (double)n;
    }
    double mp = bench_summarize(tp, o->runs).median, mv = bench_summarize(tv, o->runs).median;
    printf("| %u | %.2f | %.2f | %.1fx |\n", w, mp, mv, mv / mp);
  }
  free(tp);
  free(tv);
  free(var);
  free(packed);
  free(gaps);
}

/* ------------------------------------------------------------ 2, 3. iterator */

typedef struct varint_iter {
  const uint8_t *p, *end;
  uint64_t doc;
} varint_iter;

/* A call per doc, as tern's iterator costs (it lives in libtern). */
NOIPA static uint32_t varint_next(varint_iter *v) {
  uint64_t gap;
  if (tern_get_varint(&v->p, v->end, &gap) < 0) return TERN_DOC_END;
  v->doc += gap + 1;
  return (uint32_t)(v->doc - 1);
}

NOIPA static uint64_t iterate_varints(const uint8_t *buf, size_t len) {
  varint_iter v = {buf, buf + len, 0};
  uint64_t sum = 0;
  for (uint32_t d; (d = varint_next(&v)) != TERN_DOC_END;)
    sum += d;
  return sum;
}

NOIPA static uint64_t iterate_tern(tern_rfile *f, const tern_term_meta *m) {
  tern_postings_iter it;
  uint64_t sum = 0;
  uint32_t d;
  if (tern_postings_iter_file(&it, f, m) < 0) return 0;
  while (tern_postings_iter_next(&it, &d) == 0 && d != TERN_DOC_END)
    sum += d;
  tern_postings_iter_release(&it);
  return sum;
}

NOIPA static uint64_t advance_varints(const uint8_t *buf, size_t len, const uint32_t *targets,
                                      size_t nt) {
  varint_iter v = {buf, buf + len, 0};
  uint64_t sum = 0;
  uint32_t d = 0;
  for (size_t i = 0; i < nt; i++) {
    while (d < targets[i] && (d = varint_next(&v)) != TERN_DOC_END) {
    }
    sum += d;
  }
  return sum;
}

NOIPA static uint64_t advance_tern(tern_rfile *f, const tern_term_meta *m, const uint32_t *targets,
                                   size_t nt) {
  tern_postings_iter it;
  uint64_t sum = 0;
  uint32_t d = 0;
  if (tern_postings_iter_file(&it, f, m) < 0) return 0;
  for (size_t i = 0; i < nt && tern_postings_iter_advance(&it, targets[i], &d) == 0; i++)
    sum += d;
  tern_postings_iter_release(&it);
  return sum;
}

static int write_term(const char *path, const uint32_t *docs, uint32_t n, tern_term_meta *m) {
  tern_wfile *w;
  tern_postings_writer *pw;
  int rc = tern_wfile_create(&w, path);
  if (rc < 0) return rc;
  if ((rc = tern_frame_write_header(w, TERN_KIND_POSTINGS, 1, NULL)) == 0 &&
      (rc = tern_block_writer_new(&pw, w)) == 0) {
    rc = pw->write_term(pw, docs, n, m);
    pw->destroy(pw);
  }
  if (rc == 0) rc = tern_frame_write_footer(w);
  if (rc == 0) return tern_wfile_commit(w);
  tern_wfile_abort(w);
  return rc;
}

static int bench_iterator(const pb_opts *o, bench_rng *r) {
  const uint32_t n = (uint32_t)o->docs;
  uint32_t *docs = malloc(sizeof *docs * n);
  uint8_t *var = malloc(5 * (size_t)n);
  size_t vlen = 0;
  uint64_t doc = 0;
  for (uint32_t i = 0; i < n; i++) {
    doc += i ? 1 + bench_rng_below(r, 2 * o->gap - 1) : 0;
    docs[i] = (uint32_t)doc;
    vlen += tern_put_varint(var + vlen, i ? docs[i] - docs[i - 1] - 1 : docs[0]);
  }
  if (doc >= TERN_DOC_END) {
    fprintf(stderr, "tern-bench postings: --docs x --gap exceeds the doc id space\n");
    return 2;
  }
  char *dir = bench_mkdtemp(o->dir, "tern-bench-postings");
  char path[4096];
  tern_term_meta m;
  tern_rfile *f = NULL;
  int rc = dir ? write_term(bench_path(path, sizeof path, dir, "p.doc"), docs, n, &m) : -ENOENT;
  if (rc == 0) rc = tern_rfile_open(&f, path, TERN_IO_MMAP);
  if (rc < 0) {
    fprintf(stderr, "tern-bench postings: %s\n", tern_errmsg());
    return 1;
  }
  double *tt = malloc(sizeof(double) * o->runs), *tv = malloc(sizeof(double) * o->runs);
  printf(
      "\n## 2. iterate a term of %u docs, mean gap %llu (.doc: %.2f bytes/doc, varints: %.2f)\n\n",
      n, (unsigned long long)o->gap, (double)m.length / n, (double)vlen / n);
  printf("| | tern next() | varint loop | varint / tern |\n|---|---|---|---|\n");
  for (uint64_t run = 0; run < o->runs; run++) {
    double t0 = bench_now();
    uint64_t a = iterate_tern(f, &m);
    double t1 = bench_now();
    uint64_t b = iterate_varints(var, vlen);
    double t2 = bench_now();
    if (a != b) bench_log("postings bench: iterations disagree\n");
    sink += a;
    tt[run] = (t1 - t0) * 1e9 / n;
    tv[run] = (t2 - t1) * 1e9 / n;
  }
  double mt = bench_summarize(tt, o->runs).median, mv = bench_summarize(tv, o->runs).median;
  printf("| ns per doc | %.2f | %.2f | %.1fx |\n", mt, mv, mv / mt);

  printf("\n## 3. advance() to every k-th doc of that term (ns per advance)\n\n");
  printf("| k | tern advance() | varint next() loop | varint / tern |\n|---|---|---|---|\n");
  static const uint32_t strides[] = {8, 64, 512, 4096, 32768, 100000};
  uint32_t *targets = malloc(sizeof *targets * (n / 8 + 1));
  for (size_t s = 0; s < sizeof strides / sizeof strides[0] && strides[s] < n; s++) {
    size_t nt = 0;
    for (uint32_t i = strides[s] - 1; i < n; i += strides[s])
      targets[nt++] = docs[i] - 1;
    for (uint64_t run = 0; run < o->runs; run++) {
      double t0 = bench_now();
      uint64_t a = advance_tern(f, &m, targets, nt);
      double t1 = bench_now();
      uint64_t b = advance_varints(var, vlen, targets, nt);
      double t2 = bench_now();
      if (a != b) bench_log("postings bench: advances disagree at k=%u\n", strides[s]);
      sink += a;
      tt[run] = (t1 - t0) * 1e9 / (double)nt;
      tv[run] = (t2 - t1) * 1e9 / (double)nt;
    }
    mt = bench_summarize(tt, o->runs).median;
    mv = bench_summarize(tv, o->runs).median;
    printf("| %u | %.1f | %.1f | %.1fx |\n", strides[s], mt, mv, mv / mt);
  }
  free(targets);
  free(tt);
  free(tv);
  tern_rfile_close(f);
  bench_rmtree(dir);
  free(dir);
  free(var);
  free(docs);
  return 0;
}

int tern_bench_postings(int argc, char **argv) {
  pb_opts o;
  int rc = parse(argc, argv, &o);
  if (rc) {
    if (rc < 0) tern_bench_postings_usage(stderr);
    return rc < 0 ? 2 : 0;
  }
  char machine[256], cmd[1024];
  bench_machine(machine, sizeof machine);
  bench_cmdline(cmd, sizeof cmd, argc, argv, "tern-bench");
  printf("# tern-bench postings\n\ncommand: `%s`  \nmachine: %s\n", cmd, machine);
  bench_rng r;
  bench_rng_init(&r, PB_SEED);
  bench_blocks(&o, &r);
  return bench_iterator(&o, &r);
}

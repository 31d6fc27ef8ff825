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
#include "tools/bench/harness.h"
#include "tools/bench/opts.h"

#include "codec/bitpack.h"
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/postings.h"
#include "tern.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PB_SEED 0x706f7374ull /* "post" */

typedef struct pb_opts {
  uint64_t docs, runs, gap;
  const char *dir;
} pb_opts;

static volatile uint64_t sink;

#define PB_OPT(field) offsetof(pb_opts, field)
static const bench_opt k_pb_opts[] = {
    BENCH_U64("docs", PB_OPT(docs), "N", "1M", 1, 100000000, "doc ids of the iterated term"),
    BENCH_U64("gap", PB_OPT(gap), "G", "16", 1, 1000,
              "mean gap between doc ids, uniform in [1, 2G-1]"),
    BENCH_U64("runs", PB_OPT(runs), "R", "5", 1, 100, "runs per figure; medians are printed"),
    BENCH_STR("dir", PB_OPT(dir), "D", NULL,
              "directory for the scratch .doc file (default $TMPDIR or /tmp)"),
};

static const bench_cmd k_pb_cmd = BENCH_CMD("postings", "[options]",
                                            "postings decode, iteration and advance speed,\n"
                                            "against a varint baseline in the same run",
                                            k_pb_opts, pb_opts, NULL);

void tern_bench_postings_usage(FILE *out) { bench_opts_usage(&k_pb_cmd, out); }

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

/* One term's postings two ways: tern's .doc file and a varint list. */
typedef struct pb_term {
  tern_rfile *f;
  tern_term_meta m;
  const uint8_t *var;
  size_t vlen;
  const uint32_t *targets; /* advance: the docs to reach, nt of them (0: iterate) */
  size_t nt, items;
  uint64_t seen[2]; /* what each side returned in the round */
} pb_term;

/* ns per doc (iterate) or per advance of side `who` (0 tern, 1 varint). */
static double time_term(void *ctx, size_t who, size_t m, size_t round) {
  pb_term *x = ctx;
  (void)m;
  double t0 = bench_now();
  if (x->nt)
    x->seen[who] = who ? advance_varints(x->var, x->vlen, x->targets, x->nt)
                       : advance_tern(x->f, &x->m, x->targets, x->nt);
  else
    x->seen[who] = who ? iterate_varints(x->var, x->vlen) : iterate_tern(x->f, &x->m);
  double t = bench_now() - t0;
  if (who == (round + 1) % 2 && x->seen[0] != x->seen[1])
    bench_log("postings bench: %s disagree\n", x->nt ? "advances" : "iterations");
  sink += x->seen[who];
  return t * 1e9 / (double)x->items;
}

/* Runs the rounds on x; the medians, tern's and the varints', in t[2]. */
static int time_both(pb_term *x, uint64_t runs, double t[2]) {
  bench_rounds r = {.contenders = 2, .measures = 1, .rounds = (size_t)runs};
  int rc = bench_rounds_run(&r, time_term, NULL, x);
  t[0] = bench_rounds_median(&r, 0, 0);
  t[1] = bench_rounds_median(&r, 1, 0);
  bench_rounds_free(&r);
  return rc;
}

static void bench_advance(const pb_opts *o, pb_term *x, const uint32_t *docs, uint32_t n) {
  printf("\n## 3. advance() to every k-th doc of that term (ns per advance)\n\n");
  printf("| k | tern advance() | varint next() loop | varint / tern |\n|---|---|---|---|\n");
  static const uint32_t strides[] = {8, 64, 512, 4096, 32768, 100000};
  uint32_t *targets = malloc(sizeof *targets * (n / 8 + 1));
  for (size_t s = 0; targets && s < sizeof strides / sizeof strides[0] && strides[s] < n; s++) {
    size_t nt = 0;
    for (uint32_t i = strides[s] - 1; i < n; i += strides[s])
      targets[nt++] = docs[i] - 1;
    x->targets = targets;
    x->nt = x->items = nt;
    double t[2];
    if (time_both(x, o->runs, t) == 0)
      printf("| %u | %.1f | %.1f | %.1fx |\n", strides[s], t[0], t[1], t[1] / t[0]);
  }
  free(targets);
}

/* n doc ids with random gaps into docs[] and as varints into var; the
 * varints' length, or 0 when the ids pass the doc id space. */
static size_t make_docs(const pb_opts *o, bench_rng *r, uint32_t *docs, uint8_t *var, uint32_t n) {
  size_t vlen = 0;
  uint64_t doc = 0;
  for (uint32_t i = 0; i < n; i++) {
    doc += i ? 1 + bench_rng_below(r, 2 * o->gap - 1) : 0;
    docs[i] = (uint32_t)doc;
    vlen += tern_put_varint(var + vlen, i ? docs[i] - docs[i - 1] - 1 : docs[0]);
  }
  return doc >= TERN_DOC_END ? 0 : vlen;
}

static int bench_iterator(const pb_opts *o, bench_rng *r) {
  const uint32_t n = (uint32_t)o->docs;
  uint32_t *docs = malloc(sizeof *docs * n);
  uint8_t *var = malloc(5 * (size_t)n);
  pb_term x = {0};
  x.var = var;
  if (!docs || !var || (x.vlen = make_docs(o, r, docs, var, n)) == 0) {
    fprintf(stderr, "tern-bench postings: --docs x --gap exceeds the doc id space\n");
    return 2;
  }
  char *dir = bench_mkdtemp(o->dir, "tern-bench-postings");
  char path[4096];
  int rc = dir ? write_term(bench_path(path, sizeof path, dir, "p.doc"), docs, n, &x.m) : -ENOENT;
  if (rc == 0) rc = tern_rfile_open(&x.f, path, TERN_IO_MMAP);
  if (rc < 0) {
    fprintf(stderr, "tern-bench postings: %s\n", tern_errmsg());
    return 1;
  }
  printf(
      "\n## 2. iterate a term of %u docs, mean gap %llu (.doc: %.2f bytes/doc, varints: %.2f)\n\n",
      n, (unsigned long long)o->gap, (double)x.m.length / n, (double)x.vlen / n);
  printf("| | tern next() | varint loop | varint / tern |\n|---|---|---|---|\n");
  x.items = n;
  double t[2];
  if (time_both(&x, o->runs, t) == 0)
    printf("| ns per doc | %.2f | %.2f | %.1fx |\n", t[0], t[1], t[1] / t[0]);
  bench_advance(o, &x, docs, n);
  tern_rfile_close(x.f);
  bench_rmtree(dir);
  free(dir);
  free(var);
  free(docs);
  return 0;
}

int tern_bench_postings(int argc, char **argv) {
  pb_opts o;
  int rc = bench_opts_parse(&k_pb_cmd, &o, argc, argv);
  if (rc) return bench_opts_exit(rc);
  if (!o.dir) {
    const char *tmp = getenv("TMPDIR");
    o.dir = tmp && *tmp ? tmp : "/tmp";
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

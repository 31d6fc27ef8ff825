/* SPDX-License-Identifier: MIT */
/*
 * gen_corpus.c — writes the fuzz targets' seed corpus and must-reject
 * golden files:
 *
 *   gen_corpus OUTDIR     (files in OUTDIR/corpus/TARGET/ and OUTDIR/reject/TARGET/)
 *
 * Seeds are cut from real files: two segments written by the segment
 * writer (different shapes: a filter or none, values inline and in .val,
 * postings of 1 to 4 blocks, binary keys, restart intervals), live-docs
 * sets of every layout, and every catalog record.  Every seed must decode
 * (the program stops otherwise).  Must-reject files are seeds cut short,
 * lengthened by a byte, or with a byte flipped; only those the target
 * refuses today are kept, so the replay pins that they stay refused.
 * Deterministic: the same library writes the same files (segment ids
 * aside, which the seeds do not contain).
 */
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/livedocs.h"
#include "engine/format/catalog_schema.h"
#include "codec/segment_internal.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*target_fn)(const uint8_t *, size_t);
static const char *out_dir;
static unsigned nseeds, nrejects;

static void die(const char *what) {
  fprintf(stderr, "gen_corpus: %s: %s\n", what, tern_errmsg());
  exit(1);
}

static void mkdirs(const char *path) {
  char p[4096];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      (void)mkdir(p, 0755);
      *s = '/';
    }
  (void)mkdir(p, 0755);
}

static void put_file(const char *kind, const char *target, const char *name, const uint8_t *b,
                     size_t n) {
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/%s/%s", out_dir, kind, target);
  mkdirs(dir);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(b, 1, n, f) != n) || fclose(f) != 0) die(path);
}

/* A seed that must decode, and the damaged versions of it that are refused. */
static void seed(const char *target, target_fn fn, const char *name, const uint8_t *b, size_t n) {
  if (fn(b, n) != TERN_OK) {
    fprintf(stderr, "seed %s/%s does not decode\n", target, name);
    die(name);
  }
  put_file("corpus", target, name, b, n);
  nseeds++;
  uint8_t *m = malloc(n + 1);
  char rn[256];
  struct {
    const char *what;
    size_t len;
  } cuts[] = {{"short1", n - 1}, {"half", n / 2}, {"long1", n + 1}};
  int big = n > 4096; /* a big seed: one flipped copy is enough */
  for (size_t c = 0; c < 3; c++) {
    if (n == 0 || (c == 1 && n < 4) || big) continue;
    memcpy(m, b, n);
    m[n] = 0;
    if (fn(m, cuts[c].len) == TERN_OK) continue;
    snprintf(rn, sizeof rn, "%s-%s", name, cuts[c].what);
    put_file("reject", target, rn, m, cuts[c].len);
    nrejects++;
  }
  size_t at[] = {n / 3, n / 2, n > 0 ? n - 1 : 0};
  for (size_t k = 0; k < (big ? 1u : 3u) && n > 0; k++) {
    memcpy(m, b, n);
    m[at[k]] ^= 0x41;
    if (fn(m, n) == TERN_OK) continue;
    snprintf(rn, sizeof rn, "%s-flip%zu", name, at[k]);
    put_file("reject", target, rn, m, n);
    nrejects++;
  }
  free(m);
}

/* ------------------------------------------------------------ segments */

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die(path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) die(path);
  fclose(f);
  *len = (size_t)n;
  return b;
}

typedef struct gen_term {
  uint8_t t[64];
  uint32_t len;
} gen_term;

static uint64_t rng_state = 0x5eed;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)((rng_state >> 33) % n);
}

static int term_cmp(const void *x, const void *y) {
  const gen_term *a = x, *b = y;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(a->t, b->t, n);
  return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Segment A: base-10 keys with values, a filter, postings of many sizes.
 * Segment B: binary keys, no filter, threshold 0, restart interval 4. */
static void write_segment(const char *dir, const char *name, int shape) {
  tern_segw_options o;
  tern_segw_options_init(&o);
  o.inline_value_max = shape ? 0 : 16;
  o.bloom_bits_per_key = shape ? 0 : 10;
  o.restart_interval = shape ? 4 : 32;
  tern_segw *w;
  if (tern_segw_open(&w, dir, name, &o)) die("segw_open");
  uint32_t nkeys = shape ? 200 : 1500;
  gen_term *keys = calloc(nkeys, sizeof *keys);
  for (uint32_t i = 0; i < nkeys; i++) {
    if (shape) {
      keys[i].len = 1 + rnd(40);
      for (uint32_t k = 0; k < keys[i].len; k++) keys[i].t[k] = (uint8_t)rnd(256);
    } else {
      keys[i].len = (uint32_t)snprintf((char *)keys[i].t, sizeof keys[i].t, "k%07u", i * 7);
    }
  }
  qsort(keys, nkeys, sizeof *keys, term_cmp);
  uint32_t n = 0; /* unique */
  for (uint32_t i = 0; i < nkeys; i++)
    if (!n || term_cmp(&keys[n - 1], &keys[i])) keys[n++] = keys[i];
  const char *fa = shape ? "pk" : "id";
  if (tern_segw_field(w, fa, strlen(fa), TERN_FIELD_UNIQUE, shape ? 0 : 1)) die("field");
  uint8_t val[200];
  for (uint32_t i = 0; i < n; i++) {
    uint32_t vlen = i % 5 == 0 ? 40 + i % 150 : i % 9;
    for (uint32_t k = 0; k < vlen; k++) val[k] = (uint8_t)(i + k);
    if (tern_segw_term(w, keys[i].t, keys[i].len, &i, 1, val, vlen)) die("term");
  }
  if (tern_segw_field(w, "t", 1, 0, 2)) die("field t");
  uint32_t *docs = malloc(n * sizeof *docs);
  for (uint32_t j = 0; j < 40; j++) {
    uint32_t df = 0, step = j == 0 ? 1 : j == 1 ? 2 : j == 2 ? 3 + j : 0;
    if (step)
      for (uint32_t d = j; d < n; d += step) docs[df++] = d;
    else
      for (uint32_t d = j; d < n && df < 1 + (j * 37) % 160; d += 1 + rnd(9)) docs[df++] = d;
    char t[8];
    int tl = snprintf(t, sizeof t, "t%02u", j);
    if (tern_segw_term(w, t, (size_t)tl, docs, df, NULL, 0)) die("term t");
  }
  if (tern_segw_finish(w, n)) die("finish");
  free(docs);
  free(keys);
}

/* Segment C: one secondary field whose terms' postings are bigger than
 * the reader's first 4 KiB read (body windows, skips across them). */
static void write_big_postings(const char *dir, const char *name) {
  tern_segw *w;
  if (tern_segw_open(&w, dir, name, NULL)) die("segw_open");
  if (tern_segw_field(w, "t", 1, 0, 2)) die("field");
  uint32_t *docs = malloc(20000 * sizeof *docs), max_doc = 0;
  static const uint32_t dfs[2] = {6000, 20000}, gaps[2] = {300, 40};
  for (uint32_t j = 0; j < 2; j++) {
    uint32_t d = 0;
    for (uint32_t i = 0; i < dfs[j]; i++) docs[i] = d += 1 + rnd(gaps[j]);
    if (d >= max_doc) max_doc = d + 1;
    char t[4] = {'b', (char)('0' + j), 0, 0};
    if (tern_segw_term(w, t, 2, docs, dfs[j], NULL, 0)) die("term");
  }
  if (tern_segw_finish(w, max_doc)) die("finish");
  free(docs);
}

static void body_of(const char *dir, const char *name, const char *ext, uint8_t **buf,
                    const uint8_t **body, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
  size_t n;
  *buf = slurp(path, &n);
  *body = *buf + TERN_FRAME_HEADER_SIZE;
  *len = n - TERN_FRAME_HEADER_SIZE - TERN_FRAME_FOOTER_SIZE;
}

static void block_seeds(const tern_seg *s, const char *tag, const uint8_t *tim) {
  for (size_t i = 0; i < s->nfields; i++) {
    const tern_seg_field *f = &s->fields[i];
    for (uint64_t b = 0; b < f->nblocks; b++) {
      if (b > 1 && b + 1 != f->nblocks) continue;
      uint64_t gb = f->first_block + b;
      tern_ti_block info = {0};
      if (tern_terms_index_block(&f->index, b, &info) != TERN_OK) continue;
      const uint8_t *page = tim + TERN_BLOCK_SIZE * (gb + 1);
      size_t used = TERN_TB_PAGE; /* the block, without the page's checksum */
      while (used > 0 && page[used - 1] == 0) used--;
      uint8_t in[10 + TERN_TB_PAGE];
      in[0] = (uint8_t)f->tbf.threshold;
      tern_store16(in + 1, (uint16_t)f->tbf.inline_max);
      in[3] = (uint8_t)f->tbf.has_values;
      tern_store32(in + 4, f->tbf.max_doc);
      tern_store16(in + 8, (uint16_t)info.entries);
      memcpy(in + 10, page, used);
      char name[64];
      snprintf(name, sizeof name, "%s-%.*s-b%llu", tag, (int)f->name_len, (const char *)f->name,
               (unsigned long long)b);
      seed("terms_block", fuzz_terms_block, name, in, 10 + used);
    }
  }
}

static void postings_seeds(tern_seg *s, const char *tag, const uint8_t *doc) {
  tern_seg_cursor *c = malloc(sizeof *c);
  tern_seg_cursor_init(c);
  unsigned k = 0;
  for (size_t i = 0; i < s->nfields; i++) {
    const tern_seg_field *f = &s->fields[i];
    tern_term_entry e;
    int rc = tern_seg_first_term(s, f, c, &e);
    uint32_t seen_blocks[6] = {0};
    for (; rc == TERN_OK && k < 8; rc = tern_seg_next_term(s, c, &e)) {
      if (e.meta.pulsed) continue;
      uint32_t nb = e.meta.df / 128 > 5 ? 5 : e.meta.df / 128;
      if (seen_blocks[nb]++ >= (nb ? 1 : 2) && e.meta.length <= 4096) continue;
      size_t len = (size_t)e.meta.length;
      uint8_t *in = malloc(8 + len);
      tern_store32(in, e.meta.df);
      tern_store32(in + 4, s->max_doc);
      memcpy(in + 8, doc + e.meta.offset, len);
      char name[64];
      snprintf(name, sizeof name, "%s-df%u", tag, e.meta.df);
      seed("postings", fuzz_postings, name, in, 8 + len);
      free(in);
      k++;
    }
  }
  tern_seg_cursor_release(c);
  free(c);
}

static void pulsed_seeds(void) {
  uint8_t in[8 + 4 * 64];
  uint32_t dfs[3] = {1, 7, 64};
  for (int k = 0; k < 3; k++) {
    tern_store32(in, dfs[k] | 0x80000000u);
    tern_store32(in + 4, 100000);
    for (uint32_t i = 0; i < dfs[k]; i++) tern_store32(in + 8 + 4 * i, 3 + i * 977);
    char name[32];
    snprintf(name, sizeof name, "pulsed-df%u", dfs[k]);
    seed("postings", fuzz_postings, name, in, 8 + 4 * dfs[k]);
  }
}

static void segment_seeds(const char *dir, const char *name, const char *tag) {
  tern_seg *s;
  if (tern_seg_open(&s, dir, name, TERN_IO_PREAD)) die("seg_open");
  uint8_t *buf;
  const uint8_t *body;
  size_t len;
  body_of(dir, name, ".tix", &buf, &body, &len);
  seed("tix", fuzz_tix, tag, body, len);
  free(buf);
  body_of(dir, name, ".flt", &buf, &body, &len);
  if (len) seed("flt", fuzz_flt, tag, body, len);
  free(buf);
  char path[4096];
  size_t n;
  snprintf(path, sizeof path, "%s/%s.tim", dir, name);
  uint8_t *tim = slurp(path, &n);
  block_seeds(s, tag, tim);
  free(tim);
  snprintf(path, sizeof path, "%s/%s.doc", dir, name);
  uint8_t *doc = slurp(path, &n);
  postings_seeds(s, tag, doc);
  free(doc);
  tern_seg_close(s);
}

/* ------------------------------------------------------------ live docs */

static void liv_seed(const char *name, uint32_t max_doc, const uint32_t *docs, size_t n) {
  tern_livedocs *base, *ld;
  if (tern_livedocs_new(&base, max_doc)) die("livedocs_new");
  if (tern_livedocs_apply(&ld, base, docs, n)) die("livedocs_apply");
  uint8_t *out;
  size_t len;
  if (tern_livedocs_write(ld, fuzz_segid, &out, &len)) die("livedocs_write");
  seed("liv", fuzz_liv, name, out + TERN_FRAME_HEADER_SIZE,
       len - TERN_FRAME_HEADER_SIZE - TERN_FRAME_FOOTER_SIZE);
  free(out);
  tern_livedocs_free(ld);
  tern_livedocs_free(base);
}

static void liv_seeds(void) {
  uint32_t *d = calloc(140000, sizeof *d);
  if (!d) die("out of memory");
  size_t n = 0;
  liv_seed("empty", 1000, d, 0);
  d[0] = 5;
  liv_seed("one", 1000, d, 1);
  for (n = 0; n < 490; n++) d[n] = 10 + (uint32_t)n;
  liv_seed("run", 1000, d, n);
  for (n = 0; n < 300; n++) d[n] = 3 * (uint32_t)n;
  liv_seed("every3rd", 1000, d, n);
  for (n = 0; n < 2000; n++) d[n] = (uint32_t)n * 97;
  liv_seed("sparse-chunks", 200000, d, n);
  for (n = 0; n < 65536; n++) d[n] = (uint32_t)n;
  for (uint32_t k = 0; k < 3000; k++) d[n++] = 70000 + 5 * k;
  liv_seed("full-and-array", 140000, d, n);
  for (n = 0; n < 34000; n++) d[n] = (uint32_t)n * 2 + 1;
  liv_seed("dense", 70000, d, n);
  for (n = 0; n < 200; n++) d[n] = (uint32_t)n * 600 + (uint32_t)n % 7;
  liv_seed("runs-wide", 130000, d, n);
  /* a chunk directory: chunk 0 a bitmap, chunk 1 runs, chunk 2 an array */
  n = 0;
  for (uint32_t k = 0; k < 65536; k += 1 + rnd(3)) d[n++] = k;
  for (uint32_t r = 0; r < 400; r++)
    for (uint32_t k = 0; k < 20; k++) d[n++] = 65536 + r * 160 + k;
  for (uint32_t k = 0; k < 300; k++) d[n++] = 131072 + k * 211;
  liv_seed("directory", 200000, d, n);
  free(d);
}

/* -------------------------------------------------------------- records */

static void rec_seed(const char *name, uint8_t sel, const uint8_t *b, size_t n) {
  uint8_t *in = malloc(n + 1);
  in[0] = sel;
  memcpy(in + 1, b, n);
  seed("record", fuzz_record, name, in, n + 1);
  free(in);
}

static void record_seeds(void) {
  uint8_t fmt[TERN_REC_FORMAT_SIZE + TERN_REC_SEAL_SIZE];
  tern_rec_format_encode(fmt);
  tern_rec_seal("format", 6, fmt, TERN_REC_FORMAT_SIZE); /* stored sealed under meta/"format" */
  rec_seed("format", 0, fmt, sizeof fmt);
  tern_options o;
  tern_options_init(&o);
  tern_field_option fo[2] = {{"color", 3}, {"tag", 0}};
  o.fields = fo;
  o.nfields = 2;
  uint8_t *ob;
  size_t ol;
  if (tern_rec_options_encode(&o, &ob, &ol)) die("options");
  rec_seed("options", 1, ob, ol);
  free(ob);
  tern_rec_state st = {123456, 42, 7, 99999, 3, 0x0123456789abcdefull, 0, 0, 0};
  uint8_t sb[TERN_REC_STATE_MAX];
  rec_seed("state", 2, sb, tern_rec_state_encode(sb, &st));
  st.seq_base = 0 - (uint64_t)5;
  st.buffer_gen = 3;
  st.old_docs = 11;
  rec_seed("state4", 7, sb, tern_rec_state4_encode(sb, &st));
  uint8_t kb[TERN_REC_SEGKEY_SIZE];
  tern_rec_segkey_encode(kb, 0x0102030405ull);
  rec_seed("segkey", 3, kb, sizeof kb);
  tern_rec_segment sg = {{0}, 1000, 17, 3};
  memcpy(sg.segid, fuzz_segid, sizeof sg.segid);
  uint8_t gb[TERN_REC_SEGMENT_MAX];
  rec_seed("segment", 4, gb, tern_rec_segment_encode(gb, &sg));
  tern_term terms[2] = {{"color", "red", 3}, {"tag", "x\0y", 3}};
  size_t dl = tern_rec_doc_size(5, terms, 2);
  uint8_t *db = malloc(dl);
  tern_rec_doc_encode(db, "hello", 5, terms, 2);
  rec_seed("doc", 5, db, dl);
  for (int longkey = 0; longkey < 2; longkey++) {
    uint8_t key[TERN_KEY_MAX];
    size_t klen = longkey ? 900 : 12;
    for (size_t i = 0; i < klen; i++) key[i] = (uint8_t)(i * 13);
    uint8_t lk[TERN_REC_BUFKEY_MAX];
    size_t lkl = tern_rec_bufkey(lk, key, klen);
    size_t vl = tern_rec_bufval_size(klen, dl);
    uint8_t *in = malloc(2 + lkl + vl);
    tern_store16(in, (uint16_t)lkl);
    memcpy(in + 2, lk, lkl);
    tern_rec_bufval_encode(in + 2 + lkl, key, klen, db, dl);
    rec_seed(longkey ? "bufval-long" : "bufval", 6, in, 2 + lkl + vl);
    free(in);
  }
  free(db);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_corpus OUTDIR\n");
    return 2;
  }
  out_dir = argv[1];
  char tmpl[] = "/tmp/tern-gen-corpus-XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) die("mkdtemp");
  write_segment(dir, "a", 0);
  write_segment(dir, "b", 1);
  segment_seeds(dir, "a", "a");
  segment_seeds(dir, "b", "b");
  write_big_postings(dir, "c");
  segment_seeds(dir, "c", "c");
  pulsed_seeds();
  liv_seeds();
  record_seeds();
  tern_seg_remove(dir, "a");
  tern_seg_remove(dir, "b");
  tern_seg_remove(dir, "c");
  rmdir(dir);
  printf("%u seeds, %u must-reject files in %s\n", nseeds, nrejects, out_dir);
  return 0;
}

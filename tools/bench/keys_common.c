/* SPDX-License-Identifier: MIT */
/*
 * keys_common.c — key shapes, unique key sets and lookup samples (see
 * keys_common.h for the shapes).
 *
 * Sorting 10M keys by memcmp through an index array would chase a cache
 * miss per comparison; instead each key's first 16 bytes (zero-padded) ride
 * along as two big-endian integers, and only ties fall back to comparing
 * the whole keys.
 */
#include "tools/bench/keys_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_base36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
static const char k_hex[] = "0123456789abcdef";

#define TIMEPREFIX_START_MS 1700000000000ull
#define BASE36_POW8 2821109907456ull /* 36^8 */
#define VOCAB 4096u

static const char *const k_names[BENCH_KEYS_NSHAPES + 1] = {
    "random", "uuid4", "sequential", "timeprefixed", "decimal", "paths",
    "packages", "emails", "varlen", "file"};

const char *bench_key_shape_name(bench_key_shape s) {
  return (unsigned)s <= BENCH_KEYS_FILE ? k_names[s] : "?";
}

int bench_key_shape_parse(const char *name, bench_key_shape *out) {
  for (int s = 0; s < BENCH_KEYS_NSHAPES; s++) {
    if (strcmp(name, k_names[s]) == 0) {
      *out = (bench_key_shape)s;
      return 0;
    }
  }
  return -1;
}

int bench_key_spec_parse(const char *name, bench_key_spec *out) {
  out->path = NULL;
  if (strncmp(name, "file:", 5) == 0 && name[5]) {
    out->shape = BENCH_KEYS_FILE;
    out->path = name + 5;
    return 0;
  }
  return bench_key_shape_parse(name, &out->shape);
}

int bench_opt_key_shape(const char *text, void *field) {
  return bench_key_shape_parse(text, field);
}

int bench_opt_key_spec(const char *text, void *field) { return bench_key_spec_parse(text, field); }

size_t bench_key_width(bench_key_shape s) {
  switch (s) {
  case BENCH_KEYS_RANDOM: return 16;
  case BENCH_KEYS_UUID4: return 36;
  case BENCH_KEYS_SEQUENTIAL: return 16;
  case BENCH_KEYS_TIMEPREFIXED: return 24;
  default: return 0;
  }
}

void bench_keygen_init(bench_keygen *g, bench_key_shape shape, uint64_t seed, int stream) {
  memset(g, 0, sizeof *g);
  g->shape = shape;
  bench_rng_init(&g->rng, bench_mix64(seed) ^ bench_mix64((uint64_t)stream + 0x5EED));
  g->ts_ms = TIMEPREFIX_START_MS;
  g->odd = stream != 0;
}

/* n uniform base36 digits; 8 per 64-bit draw below 36^8 (exactly uniform). */
static void put_base36(bench_rng *r, uint8_t *out, size_t n) {
  while (n > 0) {
    uint64_t v = bench_rng_below(r, BASE36_POW8);
    for (size_t i = 0; i < 8 && n > 0; i++, n--) {
      *out++ = (uint8_t)k_base36[v % 36];
      v /= 36;
    }
  }
}

static void put_hex(uint8_t *out, uint64_t v, size_t digits) {
  for (size_t i = digits; i-- > 0;) {
    out[i] = (uint8_t)k_hex[v & 15];
    v >>= 4;
  }
}

static void put_uuid4(bench_rng *r, uint8_t *out) {
  uint64_t hi = bench_rng_next(r), lo = bench_rng_next(r);
  hi = (hi & ~0xF000ull) | 0x4000ull;                        /* version 4 */
  lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull; /* variant 10 */
  put_hex(out, hi >> 32, 8);
  out[8] = '-';
  put_hex(out + 9, (hi >> 16) & 0xFFFF, 4);
  out[13] = '-';
  put_hex(out + 14, hi & 0xFFFF, 4);
  out[18] = '-';
  put_hex(out + 19, lo >> 48, 4);
  out[23] = '-';
  put_hex(out + 24, lo & 0xFFFFFFFFFFFFull, 12);
}

static void put_decimal16(uint8_t *out, uint64_t v) {
  for (size_t i = 16; i-- > 0;) {
    out[i] = (uint8_t)('0' + v % 10);
    v /= 10;
  }
}

/* ------------------------------------------------- text-like shapes */

/* Appends within BENCH_KEY_MAX; what does not fit is cut (a cut key that
 * repeats another is redrawn like any duplicate). */
typedef struct kout {
  uint8_t *p;
  size_t n;
} kout;

static void put_bytes(kout *o, const void *s, size_t n) {
  if (n > BENCH_KEY_MAX - o->n) n = BENCH_KEY_MAX - o->n;
  memcpy(o->p + o->n, s, n);
  o->n += n;
}
static void put_str(kout *o, const char *s) { put_bytes(o, s, strlen(s)); }

static void put_u64(kout *o, uint64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  put_bytes(o, buf, (size_t)n);
}

/* Pseudo-word w of the vocabulary: 2 to 4 consonant-vowel syllables, some
 * closed by a consonant, a pure function of w. */
static void put_word(kout *o, uint32_t w) {
  static const char cons[] = "bcdfghjklmnprstvwz", vow[] = "aeiou";
  uint64_t h = bench_mix64((uint64_t)w + 0x9E3779B97F4A7C15ull);
  unsigned syl = 2 + (unsigned)(h % 3);
  h /= 3;
  char buf[16];
  size_t n = 0;
  for (unsigned i = 0; i < syl; i++) {
    buf[n++] = cons[h % 18];
    h /= 18;
    buf[n++] = vow[h % 5];
    h /= 5;
  }
  if (h & 1) buf[n++] = cons[(h >> 1) % 18];
  put_bytes(o, buf, n);
}

/* A rank in [0, n) with a Zipf-like skew (density ~ 1/x): small ranks
 * dominate, the tail is long. */
static uint32_t skewed(bench_rng *r, uint32_t n) {
  double u = bench_rng_unit(r);
  uint32_t v = (uint32_t)(exp(u * log((double)n + 1)) - 1);
  return v < n ? v : n - 1;
}

static void put_token(kout *o, bench_rng *r, size_t n) {
  uint8_t buf[BENCH_KEY_MAX];
  put_base36(r, buf, n);
  put_bytes(o, buf, n);
}

static void gen_paths(bench_rng *r, kout *o) {
  static const char *const hosts[4] = {"https://www.example.com", "https://cdn.static-assets.net",
                                       "https://api.internal.corp.example.org",
                                       "http://mirror.files.example.edu/pub"};
  static const char *const ext[6] = {".html", ".json", ".png", ".tar.gz", ".txt", ""};
  put_str(o, hosts[skewed(r, 4)]);
  unsigned depth = 2 + (unsigned)bench_rng_below(r, 7);
  for (unsigned j = 0; j < depth; j++) {
    put_str(o, "/");
    put_word(o, 100 * j + skewed(r, 4u << j));
  }
  put_str(o, "/");
  put_word(o, skewed(r, VOCAB));
  put_str(o, "-");
  put_token(o, r, 6);
  put_str(o, ext[bench_rng_below(r, 6)]);
}

static void gen_packages(bench_rng *r, kout *o) {
  static const char *const tld[3] = {"org.", "com.", "io."};
  switch (bench_rng_below(r, 3)) {
  case 0: /* @scope/name-word */
    put_str(o, "@");
    put_word(o, skewed(r, 512));
    put_str(o, "/");
    put_word(o, skewed(r, VOCAB));
    if (bench_rng_below(r, 2)) {
      put_str(o, "-");
      put_word(o, skewed(r, VOCAB));
    }
    break;
  case 1: /* org.vendor.module[.sub] */
    put_str(o, tld[skewed(r, 3)]);
    put_word(o, skewed(r, 256));
    put_str(o, ".");
    put_word(o, skewed(r, VOCAB));
    for (unsigned d = (unsigned)bench_rng_below(r, 3); d > 0; d--) {
      put_str(o, ".");
      put_word(o, skewed(r, VOCAB));
    }
    break;
  default: /* word-word2[-dev] */
    if (bench_rng_below(r, 4) == 0) put_str(o, "lib");
    put_word(o, skewed(r, VOCAB));
    put_str(o, "-");
    put_word(o, skewed(r, VOCAB));
    if (bench_rng_below(r, 3) == 0) put_str(o, "-dev");
    break;
  }
  if (bench_rng_below(r, 3) == 0) put_u64(o, bench_rng_below(r, 100)); /* libfoo2, name3 */
}

static void gen_emails(bench_rng *r, kout *o) {
  static const char *const big[4] = {"gmail.com", "yahoo.com", "outlook.com", "hotmail.com"};
  uint32_t first = skewed(r, VOCAB), last = skewed(r, VOCAB);
  switch (bench_rng_below(r, 3)) {
  case 0:
    put_word(o, first);
    put_str(o, ".");
    put_word(o, last);
    break;
  case 1:
    put_word(o, first);
    put_u64(o, bench_rng_below(r, 10000));
    break;
  default:
    put_bytes(o, &k_base36[10 + bench_rng_below(r, 26)], 1); /* an initial */
    put_str(o, ".");
    put_word(o, last);
    break;
  }
  put_str(o, "@");
  uint32_t d = skewed(r, 64);
  if (d < 4) {
    put_str(o, big[d]);
  } else {
    put_word(o, 3000 + d);
    put_str(o, d & 1 ? ".org" : ".com");
  }
}

static void gen_varlen(bench_rng *r, kout *o) {
  double u = bench_rng_unit(r);
  size_t n = (size_t)(4.0 * exp(u * log(200.0 / 4.0 + 1)));
  put_token(o, r, n < 4 ? 4 : n > BENCH_KEY_MAX ? BENCH_KEY_MAX : n);
}

size_t bench_keygen_next(bench_keygen *g, uint8_t *out) {
  kout o = {out, 0};
  switch (g->shape) {
  case BENCH_KEYS_RANDOM: put_base36(&g->rng, out, 16); o.n = 16; break;
  case BENCH_KEYS_UUID4: put_uuid4(&g->rng, out); o.n = 36; break;
  case BENCH_KEYS_SEQUENTIAL:
    put_decimal16(out, 2 * g->counter + (uint64_t)g->odd);
    o.n = 16;
    break;
  case BENCH_KEYS_TIMEPREFIXED:
    g->ts_ms += bench_rng_below(&g->rng, 3);
    put_hex(out, g->ts_ms, 16);
    put_base36(&g->rng, out + 16, 8);
    o.n = 24;
    break;
  case BENCH_KEYS_DECIMAL: put_u64(&o, 1000 + bench_rng_below(&g->rng, 1000000000000ull - 1000)); break;
  case BENCH_KEYS_PATHS: gen_paths(&g->rng, &o); break;
  case BENCH_KEYS_PACKAGES: gen_packages(&g->rng, &o); break;
  case BENCH_KEYS_EMAILS: gen_emails(&g->rng, &o); break;
  case BENCH_KEYS_VARLEN: gen_varlen(&g->rng, &o); break;
  default: break;
  }
  g->counter++;
  return o.n;
}

/* ------------------------------------------------------------ sorting */

int bench_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

typedef struct sort_ent {
  uint64_t a, b; /* bytes 0-7 and 8-15, big-endian, zero-padded */
  uint32_t idx;
} sort_ent;

static uint64_t load_be64_padded(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; i++)
    v = v << 8 | (i < n ? p[i] : 0u);
  return v;
}

static int cmp_ent(const void *x, const void *y, void *ctx) {
  const sort_ent *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  const bench_keys *k = ctx;
  return bench_key_cmp(bench_key_at(k, p->idx), bench_key_len(k, p->idx), bench_key_at(k, q->idx),
                       bench_key_len(k, q->idx));
}

int bench_keys_sort(bench_keys *k) {
  sort_ent *e = malloc((k->n ? k->n : 1) * sizeof *e);
  if (!e) return -ENOMEM;
  for (size_t i = 0; i < k->n; i++) {
    const uint8_t *p = bench_key_at(k, i);
    size_t len = bench_key_len(k, i);
    e[i].a = load_be64_padded(p, len);
    e[i].b = len > 8 ? load_be64_padded(p + 8, len - 8) : 0;
    e[i].idx = (uint32_t)i;
  }
  qsort_r(e, k->n, sizeof *e, cmp_ent, k);
  for (size_t i = 0; i < k->n; i++)
    k->order[i] = e[i].idx;
  free(e);
  return 0;
}

static int keys_equal(const bench_keys *k, uint32_t x, const bench_keys *l, uint32_t y) {
  return bench_key_cmp(bench_key_at(k, x), bench_key_len(k, x), bench_key_at(l, y),
                       bench_key_len(l, y));
}

/* Marks in `redo` every index whose key repeats an earlier one in order
 * (the larger index of each equal pair); returns how many. */
static size_t mark_duplicates(const bench_keys *k, uint8_t *redo) {
  size_t marked = 0;
  for (size_t j = 1; j < k->n; j++) {
    uint32_t x = k->order[j - 1], y = k->order[j];
    if (keys_equal(k, x, k, y) == 0) {
      uint32_t later = x > y ? x : y;
      if (!redo[later]) marked++;
      redo[later] = 1;
    }
  }
  return marked;
}

/* Marks the keys of `k` that are in `present` (both sorted: one merge
 * pass); returns how many were newly marked. */
static size_t mark_present(const bench_keys *k, const bench_keys *present, uint8_t *redo) {
  size_t marked = 0, j = 0;
  for (size_t i = 0; i < k->n && j < present->n;) {
    uint32_t x = k->order[i];
    int c = keys_equal(k, x, present, present->order[j]);
    if (c < 0) {
      i++;
    } else if (c > 0) {
      j++;
    } else {
      if (!redo[x]) marked++;
      redo[x] = 1;
      i++;
    }
  }
  return marked;
}

static int keys_alloc(bench_keys *k, bench_key_shape shape, size_t n, size_t bytes) {
  memset(k, 0, sizeof *k);
  if (n >= UINT32_MAX) return -EINVAL;
  k->shape = shape;
  k->n = n;
  k->data = malloc(bytes ? bytes : 1);
  k->off = calloc(n + 1, sizeof *k->off);
  k->order = malloc((n ? n : 1) * sizeof *k->order);
  if (!k->data || !k->off || !k->order) {
    bench_keys_free(k);
    return -ENOMEM;
  }
  return 0;
}

/* The keys' bytes: fixed-width shapes in place, others appended. */
typedef struct kbuf {
  uint8_t *p;
  size_t len, cap;
} kbuf;

static int kbuf_append(kbuf *b, const uint8_t *s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return -ENOMEM;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}

static void set_width(bench_keys *k) {
  k->width = 0;
  for (size_t i = 0; i < k->n; i++)
    if (bench_key_len(k, i) > k->width) k->width = bench_key_len(k, i);
}

/* Rebuilds k's bytes: key i drawn from `g` when redo[i] (or redo is NULL),
 * kept otherwise. */
static int redraw(bench_keys *k, bench_keygen *g, const uint8_t *redo) {
  kbuf b = {0};
  uint8_t key[BENCH_KEY_MAX];
  uint64_t start = 0; /* key i's old offset (off[i] already holds the new one) */
  for (size_t i = 0; i < k->n; i++) {
    int rc;
    uint64_t end = k->off[i + 1];
    if (!redo || redo[i]) {
      size_t len = bench_keygen_next(g, key);
      rc = kbuf_append(&b, key, len);
    } else {
      rc = kbuf_append(&b, k->data + start, (size_t)(end - start));
    }
    if (rc) {
      free(b.p);
      return rc;
    }
    start = end;
    k->off[i + 1] = b.len;
  }
  free(k->data);
  k->data = b.p ? b.p : malloc(1);
  if (!k->data) return -ENOMEM;
  set_width(k);
  return 0;
}

/* Draws every key from `g`, sorts, and redraws while duplicates (and keys
 * of `present` when given) remain. */
static int draw_unique(bench_keys *k, bench_keygen *g, const bench_keys *present) {
  uint8_t *redo = malloc(k->n ? k->n : 1);
  if (!redo) return -ENOMEM;
  int rc = redraw(k, g, NULL);
  while (rc == 0) {
    if ((rc = bench_keys_sort(k)) != 0) break;
    memset(redo, 0, k->n);
    size_t pending = mark_duplicates(k, redo);
    if (present) pending += mark_present(k, present, redo);
    if (pending == 0) break;
    rc = redraw(k, g, redo);
  }
  free(redo);
  return rc;
}

int bench_keys_generate(bench_keys *out, bench_key_shape shape, size_t n, uint64_t seed) {
  if (shape >= BENCH_KEYS_NSHAPES) return -EINVAL;
  int rc = keys_alloc(out, shape, n, 1);
  if (rc) return rc;
  bench_keygen g;
  bench_keygen_init(&g, shape, seed, 0);
  rc = draw_unique(out, &g, NULL);
  if (rc) bench_keys_free(out);
  return rc;
}

/* ------------------------------------------------------------ files */

/* Keeps the first occurrence of every key (input order otherwise kept). */
static int drop_file_duplicates(bench_keys *k) {
  int rc = bench_keys_sort(k);
  if (rc) return rc;
  uint8_t *dup = calloc(k->n ? k->n : 1, 1);
  if (!dup) return -ENOMEM;
  mark_duplicates(k, dup);
  size_t w = 0, at = 0;
  for (size_t i = 0; i < k->n; i++) {
    if (dup[i]) continue;
    size_t len = bench_key_len(k, i);
    memmove(k->data + at, bench_key_at(k, i), len);
    k->off[w] = at;
    at += len;
    w++;
  }
  k->off[w] = at;
  k->n = w;
  free(dup);
  return bench_keys_sort(k);
}

static int load_file(bench_keys *out, const char *path, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -errno;
  kbuf b = {0};
  size_t n = 0, room = 1024;
  uint64_t *off = malloc((room + 1) * sizeof *off);
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  int rc = off ? 0 : -ENOMEM;
  off[0] = 0;
  while (rc == 0 && (cap == 0 || n < cap) && (got = getline(&line, &lcap, f)) >= 0) {
    size_t len = (size_t)got;
    if (len && line[len - 1] == '\n') len--;
    if (len == 0 || len > BENCH_FILE_KEY_MAX) continue;
    if (n == room) {
      uint64_t *o2 = realloc(off, (2 * room + 1) * sizeof *off);
      if (!o2) {
        rc = -ENOMEM;
        break;
      }
      off = o2;
      room *= 2;
    }
    rc = kbuf_append(&b, (const uint8_t *)line, len);
    off[++n] = b.len;
  }
  free(line);
  fclose(f);
  if (rc == 0 && n == 0) rc = -EINVAL;
  if (rc == 0 && n >= UINT32_MAX) rc = -EINVAL;
  memset(out, 0, sizeof *out);
  out->shape = BENCH_KEYS_FILE;
  out->n = n;
  out->data = b.p;
  out->off = off;
  out->order = rc ? NULL : malloc((n ? n : 1) * sizeof *out->order);
  if (rc == 0 && !out->order) rc = -ENOMEM;
  if (rc == 0) rc = drop_file_duplicates(out);
  if (rc) {
    bench_keys_free(out);
    return rc;
  }
  set_width(out);
  return 0;
}

int bench_keys_load(bench_keys *out, const bench_key_spec *spec, size_t n, uint64_t seed) {
  if (spec->shape == BENCH_KEYS_FILE) return load_file(out, spec->path, n);
  return bench_keys_generate(out, spec->shape, n, seed);
}

/* Near neighbours of file keys: a present key + ".~" + 3 base36 chars. */
static int file_absent(bench_keys *out, const bench_keys *present, uint64_t seed) {
  bench_rng r;
  bench_rng_init(&r, bench_mix64(seed) ^ 0xAB5E);
  uint8_t *redo = malloc(out->n ? out->n : 1);
  if (!redo) return -ENOMEM;
  memset(redo, 1, out->n);
  uint8_t *old = NULL;
  int rc = 0;
  for (;;) {
    kbuf b = {0};
    uint64_t start = 0;
    for (size_t i = 0; i < out->n && rc == 0; i++) {
      uint8_t key[BENCH_FILE_KEY_MAX + 8];
      size_t len;
      if (redo[i]) {
        size_t src = (size_t)bench_rng_below(&r, present->n);
        len = bench_key_len(present, src);
        if (len > BENCH_FILE_KEY_MAX - 5) len = BENCH_FILE_KEY_MAX - 5;
        memcpy(key, bench_key_at(present, src), len);
        key[len++] = '.';
        key[len++] = '~';
        put_base36(&r, key + len, 3);
        len += 3;
      } else {
        len = (size_t)(out->off[i + 1] - start);
        memcpy(key, old + start, len);
      }
      start = out->off[i + 1];
      rc = kbuf_append(&b, key, len);
      out->off[i + 1] = b.len;
    }
    free(old);
    old = NULL;
    free(out->data);
    out->data = b.p ? b.p : malloc(1);
    if (rc || !out->data || (rc = bench_keys_sort(out)) != 0) break;
    memset(redo, 0, out->n);
    if (mark_duplicates(out, redo) + mark_present(out, present, redo) == 0) break;
    old = out->data;
    out->data = NULL;
  }
  free(redo);
  set_width(out);
  return rc ? rc : out->data ? 0 : -ENOMEM;
}

int bench_keys_absent(bench_keys *out, const bench_keys *present, size_t m, uint64_t seed) {
  int rc = keys_alloc(out, present->shape, m, 1);
  if (rc) return rc;
  if (present->shape == BENCH_KEYS_FILE) {
    rc = file_absent(out, present, seed);
  } else if (present->shape == BENCH_KEYS_SEQUENTIAL && m <= present->n) {
    /* Odd numbers spread evenly over the present range (which holds the
     * even numbers 0 .. 2(n-1)): distinct because n/m >= 1. */
    free(out->data);
    out->data = malloc(m * 16 + 1);
    if (!out->data) rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < m; i++) {
      uint64_t j = (uint64_t)i * present->n / m; /* < 2^64: both < 2^32 */
      put_decimal16(out->data + i * 16, 2 * j + 1);
      out->off[i + 1] = (i + 1) * 16;
    }
    out->width = 16;
    if (rc == 0) rc = bench_keys_sort(out);
  } else {
    bench_keygen g;
    bench_keygen_init(&g, present->shape, seed, 1);
    /* Past the present range for sequential: keep counting odd numbers
     * from where the present keys end. */
    if (present->shape == BENCH_KEYS_SEQUENTIAL) g.counter = present->n;
    rc = draw_unique(out, &g, present);
  }
  if (rc) bench_keys_free(out);
  return rc;
}

void bench_keys_free(bench_keys *k) {
  free(k->data);
  free(k->off);
  free(k->order);
  k->data = NULL;
  k->off = NULL;
  k->order = NULL;
  k->n = 0;
}

double bench_keys_mean_len(const bench_keys *k) {
  return k->n ? (double)k->off[k->n] / (double)k->n : 0;
}

int bench_keys_contains(const bench_keys *k, const uint8_t *key, size_t len) {
  size_t lo = 0, hi = k->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t x = k->order[mid];
    int c = bench_key_cmp(bench_key_at(k, x), bench_key_len(k, x), key, len);
    if (c == 0) return 1;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

int bench_keys_check_sorted_unique(const bench_keys *k) {
  for (size_t j = 1; j < k->n; j++)
    if (keys_equal(k, k->order[j - 1], k, k->order[j]) >= 0) return 0;
  return 1;
}

void bench_value_fill(uint8_t *out, uint32_t doc, size_t vbytes) {
  for (size_t i = 0; i < vbytes; i++)
    out[i] = i < 4 ? (uint8_t)(doc >> (8 * i)) : (uint8_t)(doc * 31u + i);
}

int bench_sample(bench_rng *r, size_t pool, size_t n, uint32_t *out) {
  if (pool == 0) return n == 0 ? 0 : -EINVAL;
  if (n > pool) {
    for (size_t i = 0; i < n; i++)
      out[i] = (uint32_t)bench_rng_below(r, pool);
    return 0;
  }
  uint32_t *perm = malloc(pool * sizeof *perm);
  if (!perm) return -ENOMEM;
  for (size_t i = 0; i < pool; i++)
    perm[i] = (uint32_t)i;
  for (size_t i = 0; i < n; i++) {
    size_t j = i + (size_t)bench_rng_below(r, pool - i);
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
    out[i] = perm[i];
  }
  free(perm);
  return 0;
}

int bench_key_stream_fill(bench_key_stream *s, const bench_keys *k, const uint32_t *idx, size_t n) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) bytes += bench_key_len(k, idx[i]);
  bench_key_stream_free(s);
  s->data = malloc(bytes ? bytes : 1);
  s->off = malloc((n + 1) * sizeof *s->off);
  if (!s->data || !s->off) {
    bench_key_stream_free(s);
    return -ENOMEM;
  }
  s->off[0] = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = bench_key_len(k, idx[i]);
    memcpy(s->data + s->off[i], bench_key_at(k, idx[i]), len);
    s->off[i + 1] = s->off[i] + len;
  }
  s->n = n;
  s->idx = idx;
  return 0;
}

void bench_key_stream_free(bench_key_stream *s) {
  free(s->data);
  free(s->off);
  *s = (bench_key_stream){0};
}

/*
 * keys_common.c — key shapes, unique key sets and lookup samples (see
 * keys_common.h for the shapes).
 *
 * Sorting 10M keys by memcmp through an index array would chase a cache
 * miss per comparison; instead each key's first 16 bytes ride along as two
 * big-endian integers, and only ties (uuid4 and timeprefixed share their
 * first 16 bytes rarely) fall back to comparing the rest.
 */
#include "tools/bench/keys_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_base36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
static const char k_hex[] = "0123456789abcdef";

#define TIMEPREFIX_START_MS 1700000000000ull
#define BASE36_POW8 2821109907456ull /* 36^8 */

const char *bench_key_shape_name(bench_key_shape s) {
  switch (s) {
  case BENCH_KEYS_RANDOM: return "random";
  case BENCH_KEYS_UUID4: return "uuid4";
  case BENCH_KEYS_SEQUENTIAL: return "sequential";
  case BENCH_KEYS_TIMEPREFIXED: return "timeprefixed";
  }
  return "?";
}

int bench_key_shape_parse(const char *name, bench_key_shape *out) {
  for (int s = BENCH_KEYS_RANDOM; s <= BENCH_KEYS_TIMEPREFIXED; s++) {
    if (strcmp(name, bench_key_shape_name((bench_key_shape)s)) == 0) {
      *out = (bench_key_shape)s;
      return 0;
    }
  }
  return -1;
}

size_t bench_key_width(bench_key_shape s) {
  switch (s) {
  case BENCH_KEYS_RANDOM: return 16;
  case BENCH_KEYS_UUID4: return 36;
  case BENCH_KEYS_SEQUENTIAL: return 16;
  case BENCH_KEYS_TIMEPREFIXED: return 24;
  }
  return 0;
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

void bench_keygen_next(bench_keygen *g, uint8_t *out) {
  switch (g->shape) {
  case BENCH_KEYS_RANDOM: put_base36(&g->rng, out, 16); break;
  case BENCH_KEYS_UUID4: put_uuid4(&g->rng, out); break;
  case BENCH_KEYS_SEQUENTIAL: put_decimal16(out, 2 * g->counter + (uint64_t)g->odd); break;
  case BENCH_KEYS_TIMEPREFIXED:
    g->ts_ms += bench_rng_below(&g->rng, 3);
    put_hex(out, g->ts_ms, 16);
    put_base36(&g->rng, out + 16, 8);
    break;
  }
  g->counter++;
}

/* ------------------------------------------------------------ sorting */

typedef struct sort_ent {
  uint64_t a, b; /* bytes 0-7 and 8-15, big-endian */
  uint32_t idx;
} sort_ent;

static uint64_t load_be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

static int cmp_ent(const void *x, const void *y, void *ctx) {
  const sort_ent *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  const bench_keys *k = ctx;
  if (k->width <= 16) return 0;
  return memcmp(bench_key_at(k, p->idx) + 16, bench_key_at(k, q->idx) + 16, k->width - 16);
}

int bench_keys_sort(bench_keys *k) {
  sort_ent *e = malloc((k->n ? k->n : 1) * sizeof *e);
  if (!e) return -ENOMEM;
  for (size_t i = 0; i < k->n; i++) {
    const uint8_t *p = bench_key_at(k, i);
    e[i].a = load_be64(p);
    e[i].b = load_be64(p + 8);
    e[i].idx = (uint32_t)i;
  }
  qsort_r(e, k->n, sizeof *e, cmp_ent, k);
  for (size_t i = 0; i < k->n; i++)
    k->order[i] = e[i].idx;
  free(e);
  return 0;
}

/* Marks in `redo` every index whose key repeats an earlier one in order
 * (the larger index of each equal pair); returns how many. */
static size_t mark_duplicates(const bench_keys *k, uint8_t *redo) {
  size_t marked = 0;
  for (size_t j = 1; j < k->n; j++) {
    uint32_t x = k->order[j - 1], y = k->order[j];
    if (memcmp(bench_key_at(k, x), bench_key_at(k, y), k->width) == 0) {
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
    int c = memcmp(bench_key_at(k, x), bench_key_at(present, present->order[j]), k->width);
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

static int keys_alloc(bench_keys *k, bench_key_shape shape, size_t n) {
  memset(k, 0, sizeof *k);
  if (n >= UINT32_MAX) return -EINVAL;
  k->shape = shape;
  k->n = n;
  k->width = bench_key_width(shape);
  k->data = malloc((n ? n : 1) * k->width);
  k->order = malloc((n ? n : 1) * sizeof *k->order);
  if (!k->data || !k->order) {
    bench_keys_free(k);
    return -ENOMEM;
  }
  return 0;
}

/* Draws the keys flagged in `redo` from `g`, sorts, and repeats while
 * `reject` (duplicates, and keys of `present` when given) flags any. */
static int draw_unique(bench_keys *k, bench_keygen *g, const bench_keys *present) {
  uint8_t *redo = malloc(k->n ? k->n : 1);
  if (!redo) return -ENOMEM;
  memset(redo, 1, k->n);
  size_t pending = k->n;
  int rc = 0;
  while (pending > 0) {
    for (size_t i = 0; i < k->n; i++) {
      if (!redo[i]) continue;
      bench_keygen_next(g, k->data + i * k->width);
      redo[i] = 0;
    }
    if ((rc = bench_keys_sort(k)) != 0) break;
    pending = mark_duplicates(k, redo);
    if (present) pending += mark_present(k, present, redo);
  }
  free(redo);
  return rc;
}

int bench_keys_generate(bench_keys *out, bench_key_shape shape, size_t n, uint64_t seed) {
  int rc = keys_alloc(out, shape, n);
  if (rc) return rc;
  bench_keygen g;
  bench_keygen_init(&g, shape, seed, 0);
  rc = draw_unique(out, &g, NULL);
  if (rc) bench_keys_free(out);
  return rc;
}

int bench_keys_absent(bench_keys *out, const bench_keys *present, size_t m, uint64_t seed) {
  int rc = keys_alloc(out, present->shape, m);
  if (rc) return rc;
  if (present->shape == BENCH_KEYS_SEQUENTIAL && m <= present->n) {
    /* Odd numbers spread evenly over the present range (which holds the
     * even numbers 0 .. 2(n-1)): distinct because n/m >= 1. */
    for (size_t i = 0; i < m; i++) {
      uint64_t j = (uint64_t)i * present->n / m; /* < 2^64: both < 2^32 */
      put_decimal16(out->data + i * out->width, 2 * j + 1);
    }
    rc = bench_keys_sort(out);
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
  free(k->order);
  k->data = NULL;
  k->order = NULL;
  k->n = 0;
}

int bench_keys_contains(const bench_keys *k, const uint8_t *key) {
  size_t lo = 0, hi = k->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = memcmp(bench_key_at(k, k->order[mid]), key, k->width);
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
    if (memcmp(bench_key_at(k, k->order[j - 1]), bench_key_at(k, k->order[j]), k->width) >= 0)
      return 0;
  return 1;
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

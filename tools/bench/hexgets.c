/* SPDX-License-Identifier: MIT */
/* hexgets.c — hex key sets and warm get loops (hexgets.h). */
#include "tools/bench/hexgets.h"

#include <stdlib.h>
#include <string.h>

void bench_hex_key(bench_rng *r, uint8_t *out) {
  static const char hex[] = "0123456789abcdef";
  uint64_t a = bench_rng_next(r);
  for (int i = 0; i < BENCH_HEX_KEY; i++, a >>= 4)
    out[i] = (uint8_t)hex[a & 15];
}

int bench_hex_key_cmp(const void *a, const void *b) { return memcmp(a, b, BENCH_HEX_KEY); }

uint8_t *bench_hex_keys_sorted(uint64_t seed, size_t *n) {
  uint8_t *k = malloc(*n ? *n * BENCH_HEX_KEY : 1);
  if (!k) return NULL;
  bench_rng r;
  bench_rng_init(&r, seed);
  for (size_t i = 0; i < *n; i++)
    bench_hex_key(&r, k + i * BENCH_HEX_KEY);
  qsort(k, *n, BENCH_HEX_KEY, bench_hex_key_cmp);
  size_t u = 0;
  for (size_t i = 0; i < *n; i++)
    if (!u || memcmp(k + (u - 1) * BENCH_HEX_KEY, k + i * BENCH_HEX_KEY, BENCH_HEX_KEY))
      memmove(k + u++ * BENCH_HEX_KEY, k + i * BENCH_HEX_KEY, BENCH_HEX_KEY);
  *n = u;
  return k;
}

uint8_t *bench_time_keys_sorted(uint64_t seed, size_t *n) {
  uint8_t *k = malloc(*n ? *n * BENCH_HEX_KEY : 1);
  if (!k) return NULL;
  bench_rng r;
  bench_rng_init(&r, seed);
  for (size_t i = 0; i < *n; i++) {
    char t[BENCH_HEX_KEY + 1];
    snprintf(t, sizeof t, "t%015llu", (unsigned long long)(i * 37 + bench_rng_below(&r, 37)));
    memcpy(k + i * BENCH_HEX_KEY, t, BENCH_HEX_KEY);
  }
  return k;
}

void bench_hex_keys_shuffle(uint8_t *keys, size_t n, bench_rng *r) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)bench_rng_below(r, i);
    uint8_t t[BENCH_HEX_KEY];
    memcpy(t, keys + (i - 1) * BENCH_HEX_KEY, BENCH_HEX_KEY);
    memmove(keys + (i - 1) * BENCH_HEX_KEY, keys + j * BENCH_HEX_KEY, BENCH_HEX_KEY);
    memcpy(keys + j * BENCH_HEX_KEY, t, BENCH_HEX_KEY);
  }
}

NOIPA double bench_hex_time_gets(tern_index *idx, const uint8_t *keys, size_t n, size_t *found,
                                 int *err) {
  tern_snapshot *s;
  *err = tern_snapshot_open(&s, idx);
  if (*err) return 0;
  uint64_t v;
  size_t vlen, hits = 0;
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    int rc = tern_get(s, keys + i * BENCH_HEX_KEY, BENCH_HEX_KEY, &v, sizeof v, &vlen);
    if (rc == TERN_OK)
      hits++;
    else if (rc != TERN_NOTFOUND)
      *err = rc;
  }
  double t = bench_now() - t0;
  tern_snapshot_close(s);
  *found = hits;
  return t;
}

size_t bench_nsegments(tern_index *idx) {
  tern_snapshot *s;
  if (tern_snapshot_open(&s, idx)) return 0;
  size_t n = tern_snapshot_nsegments(s);
  tern_snapshot_close(s);
  return n;
}

/* SPDX-License-Identifier: MIT */
/*
 * key_range.c — tern_bounds as one half-open key range (key_range.h).
 */
#include "engine/read/key_range.h"

#include <string.h>

/* The shortest key greater than every key starting with p[0..n):
 * trailing 0xff bytes dropped, the last other one incremented.  Returns
 * its length, 0 when there is none (p is all 0xff). */
static size_t prefix_successor(const uint8_t *p, size_t n, uint8_t *out) {
  while (n > 0 && p[n - 1] == 0xff)
    n--;
  if (n == 0) return 0;
  memcpy(out, p, n);
  out[n - 1]++;
  return n;
}

void tern_key_range_between(tern_key_range *r, const tern_slice *from, const tern_slice *to) {
  r->lolen = r->hilen = 0;
  r->has_hi = 0;
  if (from && from->data && from->len) {
    memcpy(r->lo, from->data, from->len);
    r->lolen = from->len;
  }
  if (to && to->data) {
    if (to->len) memcpy(r->hi, to->data, to->len);
    r->hilen = to->len;
    r->has_hi = 1;
  }
}

/* Narrows r to the keys starting with p[0..n): lo raised to p, hi lowered
 * to p's successor (none when p is all 0xff bytes). */
static void narrow_to_prefix(tern_key_range *r, const uint8_t *p, size_t n) {
  if (tern_key_cmp(p, n, r->lo, r->lolen) > 0) {
    memcpy(r->lo, p, n);
    r->lolen = n;
  }
  uint8_t succ[TERN_KEY_MAX];
  size_t sl = prefix_successor(p, n, succ);
  if (sl && !(r->has_hi && tern_key_cmp(succ, sl, r->hi, r->hilen) >= 0)) {
    memcpy(r->hi, succ, sl);
    r->hilen = sl;
    r->has_hi = 1;
  }
}

void tern_key_range_set(tern_key_range *r, const tern_bounds *b) {
  tern_key_range_between(r, b ? &b->from : NULL, b ? &b->to : NULL);
  if (b && b->prefix.data && b->prefix.len) narrow_to_prefix(r, b->prefix.data, b->prefix.len);
}

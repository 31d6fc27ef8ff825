/* SPDX-License-Identifier: MIT */
/*
 * counters.c — the engine's operation counts (counters.h).
 */
#include "engine/util/counters.h"

tern_engine_counts tern_engine_count;
_Thread_local tern_get_counts tern_get_count TERN_TLS_IE;

#include <stdalign.h>

enum { GET_STRIPES = 16 };

typedef struct get_stripe {
  alignas(64) atomic_ulong n;
} get_stripe;

static get_stripe get_stripes[GET_STRIPES];
static _Thread_local unsigned my_stripe TERN_TLS_IE; /* 0: not taken yet */
static atomic_uint next_stripe;

void tern_count_gets(unsigned long n) {
  unsigned i = my_stripe;
  if (TERN_UNLIKELY(!i)) {
    i = 1 + atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % GET_STRIPES;
    my_stripe = i;
  }
  atomic_fetch_add_explicit(&get_stripes[i - 1].n, n, memory_order_relaxed);
}

uint64_t tern_gets_total(void) {
  uint64_t t = 0;
  for (unsigned i = 0; i < GET_STRIPES; i++)
    t += atomic_load_explicit(&get_stripes[i].n, memory_order_relaxed);
  return t;
}

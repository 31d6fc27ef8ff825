/* SPDX-License-Identifier: MIT */
/*
 * queue_spare.c — an index's spare read queue (queue_spare.h).
 */
#include "engine/read/queue_spare.h"

int tern_queue_take(tern_index *idx, unsigned depth, tern_rqueue **q) {
  tern_rqueue *spare = atomic_exchange_explicit(&idx->spare_queue, NULL, memory_order_acq_rel);
  if (spare && tern_rqueue_reusable(spare, depth)) {
    *q = spare;
    return TERN_OK;
  }
  if (spare) tern_rqueue_close(spare); /* another backend or table asked for since */
  return tern_rqueue_open(q, depth);
}

void tern_queue_give(tern_index *idx, tern_rqueue *q) {
  if (!q) return;
  tern_rqueue *none = NULL;
  if (tern_rqueue_inflight(q) == 0 &&
      atomic_compare_exchange_strong_explicit(&idx->spare_queue, &none, q, memory_order_acq_rel,
                                              memory_order_relaxed))
    return;
  tern_rqueue_close(q);
}

void tern_queue_spare_close(tern_index *idx) {
  tern_rqueue_close(atomic_exchange_explicit(&idx->spare_queue, NULL, memory_order_acq_rel));
}

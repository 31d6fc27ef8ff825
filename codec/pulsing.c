/* SPDX-License-Identifier: MIT */
/*
 * pulsing.c — the pulsing writer (Lucene's PulsingPostingsFormat): a term
 * whose doc frequency is at most the threshold keeps its doc ids in its
 * dictionary entry, saving the postings read of a lookup; others go to the
 * delegate.  For a primary key (df 1) this is what makes a lookup one page.
 *
 * Nothing is copied: meta->docs points at the caller's array, which the
 * caller encodes into the entry before it writes the next term.
 */
#include "codec/postings.h"
#include "codec/status.h"

#include <stdlib.h>

typedef struct pulsing_writer {
  tern_postings_writer base;
  uint32_t threshold;
  tern_postings_writer *delegate;
} pulsing_writer;

static int pulsing_write_term(tern_postings_writer *self, const uint32_t *docs, uint32_t n,
                              tern_term_meta *meta) {
  pulsing_writer *w = (pulsing_writer *)self;
  if (n == 0 || n > w->threshold) return w->delegate->write_term(w->delegate, docs, n, meta);
  for (uint32_t i = 0; i < n; i++) {
    if (docs[i] == TERN_DOC_END || (i > 0 && docs[i] <= docs[i - 1]))
      return tern_fail(TERN_EINVAL, "pulsing writer: doc ids not ascending or reserved at %u", i);
  }
  meta->df = n;
  meta->pulsed = 1;
  meta->docs = docs;
  meta->offset = 0;
  meta->length = 0;
  return TERN_OK;
}

static int pulsing_finish(tern_postings_writer *self) {
  pulsing_writer *w = (pulsing_writer *)self;
  return w->delegate->finish(w->delegate);
}

static void pulsing_destroy(tern_postings_writer *self) {
  pulsing_writer *w = (pulsing_writer *)self;
  if (!w) return;
  if (w->delegate) w->delegate->destroy(w->delegate);
  free(w);
}

int tern_pulsing_writer_new(tern_postings_writer **out, uint32_t threshold,
                            tern_postings_writer *delegate) {
  *out = NULL;
  if (!delegate) return tern_fail(TERN_EINVAL, "pulsing writer: no delegate");
  if (threshold > TERN_PULSE_MAX) {
    delegate->destroy(delegate);
    return tern_fail(TERN_EINVAL, "pulsing writer: threshold %u above %u", threshold,
                     TERN_PULSE_MAX);
  }
  pulsing_writer *w = calloc(1, sizeof *w);
  if (!w) {
    delegate->destroy(delegate);
    return tern_fail(TERN_ENOMEM, "pulsing writer");
  }
  w->base.write_term = pulsing_write_term;
  w->base.finish = pulsing_finish;
  w->base.destroy = pulsing_destroy;
  w->threshold = threshold;
  w->delegate = delegate;
  *out = &w->base;
  return TERN_OK;
}

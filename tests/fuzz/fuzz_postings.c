/* SPDX-License-Identifier: MIT */
/*
 * fuzz_postings.c — one term's postings in .doc (codec/postings_reader.c).
 * Input: [0..3] df (LE), [4..7] max_doc (LE), then the term's bytes, which
 * the target places in a framed .doc buffer.  df with bit 31 set: a pulsed
 * term, whose doc ids (u32 LE) are the bytes, through the inline iterator.  The read-path page checksums
 * are not attached (as if re-stamped), so every byte reaches the decoder.
 * What tern_postings_check accepts, the iterator must read whole: df
 * strictly ascending docs below max_doc, the same through advance().
 */
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/io.h"
#include "codec/postings.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

/* strict: the check accepted the term, so the read must agree with it. */
static int read_all(tern_rfile *f, const tern_term_meta *m, uint32_t max_doc, int strict,
                    uint32_t *last) {
  tern_postings_iter it;
  int rc = tern_postings_iter_file(&it, f, m);
  if (rc != TERN_OK) return rc;
  uint32_t n = 0, doc, prev = 0;
  while ((rc = tern_postings_iter_next(&it, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    FUZZ_ASSERT(!strict || (doc < max_doc && (n == 0 || doc > prev) && n < m->df));
    FUZZ_ASSERT(n <= m->df); /* the iterator stops at df whatever the bytes */
    prev = doc;
    n++;
  }
  tern_postings_iter_release(&it);
  if (rc == TERN_OK && strict) FUZZ_ASSERT(n == m->df);
  *last = prev;
  return rc;
}

/* advance() by strides must land on docs the full read saw (<= last). */
static int skim(tern_rfile *f, const tern_term_meta *m, uint32_t stride) {
  tern_postings_iter it;
  int rc = tern_postings_iter_file(&it, f, m);
  if (rc != TERN_OK) return rc;
  uint32_t doc = 0, target = 0;
  while ((rc = tern_postings_iter_advance(&it, target, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    FUZZ_ASSERT(doc >= target);
    target = doc + stride;
    if (target < doc) break;
  }
  tern_postings_iter_release(&it);
  return rc;
}

/* A pulsed term: the check and the inline iterator must agree. */
static int pulsed(uint32_t df, uint32_t max_doc, const uint8_t *p, size_t n) {
  uint32_t docs[TERN_PULSE_MAX];
  if (df > TERN_PULSE_MAX || n != 4 * (size_t)df) return TERN_EINVAL;
  for (uint32_t i = 0; i < df; i++) docs[i] = tern_load32(p + 4 * i);
  tern_term_meta m = {.df = df, .pulsed = 1, .docs = docs};
  int rc = tern_postings_check(NULL, &m, max_doc);
  tern_postings_iter it;
  int irc = tern_postings_iter_inline(&it, docs, df);
  if (rc == TERN_OK) FUZZ_ASSERT(irc == TERN_OK);
  if (irc != TERN_OK) return rc;
  uint32_t doc, n_seen = 0;
  while ((irc = tern_postings_iter_next(&it, &doc)) == TERN_OK && doc != TERN_DOC_END) {
    FUZZ_ASSERT(n_seen < df && doc == docs[n_seen]);
    n_seen++;
  }
  FUZZ_ASSERT(irc == TERN_OK && n_seen == df);
  tern_postings_iter_release(&it);
  FUZZ_ASSERT(tern_postings_iter_inline(&it, docs, df) == TERN_OK);
  uint32_t target = df ? docs[df / 2] : 0;
  FUZZ_ASSERT(tern_postings_iter_advance(&it, target, &doc) == TERN_OK);
  FUZZ_ASSERT(doc >= target);
  tern_postings_iter_release(&it);
  return rc;
}

int fuzz_postings(const uint8_t *data, size_t size) {
  if (size < 8) return TERN_EINVAL;
  uint32_t df = tern_load32(data), max_doc = tern_load32(data + 4);
  if (df >> 31) return pulsed(df & 0x7fffffffu, max_doc, data + 8, size - 8);
  size_t tlen = size - 8;
  uint8_t *buf = calloc(1, TERN_FRAME_HEADER_SIZE + tlen + TERN_FRAME_FOOTER_SIZE);
  if (!buf) return TERN_ENOMEM;
  memcpy(buf + TERN_FRAME_HEADER_SIZE, data + 8, tlen);
  tern_rfile *f;
  int rc = tern_rfile_open_memory(&f, buf, TERN_FRAME_HEADER_SIZE + tlen + TERN_FRAME_FOOTER_SIZE,
                                  "fuzz.doc");
  if (rc == TERN_OK) {
    tern_term_meta m = {.df = df, .pulsed = 0, .offset = TERN_FRAME_HEADER_SIZE, .length = tlen};
    rc = tern_postings_check(f, &m, max_doc);
    uint32_t last = 0;
    int rrc = df ? read_all(f, &m, max_doc, rc == TERN_OK, &last) : TERN_ECORRUPT;
    if (rc == TERN_OK) FUZZ_ASSERT(rrc == TERN_OK);
    if (rc == TERN_OK) {
      FUZZ_ASSERT(skim(f, &m, 1 + last / 7) == TERN_OK);
      FUZZ_ASSERT(skim(f, &m, 200) == TERN_OK);
    } else if (df) {
      (void)skim(f, &m, 300);
    }
    tern_rfile_close(f);
  }
  free(buf);
  return rc;
}

FUZZ_DEFINE_ENTRY(fuzz_postings)

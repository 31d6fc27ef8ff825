/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tix.c — a .tix body (codec/segment_open.c: field table, terms
 * indexes, page checksums of .doc, .val and .flt), framed with a valid
 * checksum by the target so the structural checks run, each field's
 * terms index walked (tern_terms_index_walk_find) and searched for its
 * least and greatest term; then the frame validator on the raw bytes.
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static void exercise(const tern_seg *s) {
  for (size_t i = 0; i < tern_seg_nfields(s); i++) {
    const tern_seg_field *f = tern_seg_field_at(s, i);
    FUZZ_ASSERT(tern_seg_find_field(s, f->name, f->name_len) == f);
    if (!f->nterms) continue;
    /* A walk (groups not decoded yet): a damaged group fails it, never
     * gives a block outside the field; where the decode takes the group
     * too, both name the same block. */
    tern_ti_walk w;
    tern_ti_block info;
    uint64_t wb[2] = {UINT64_MAX, UINT64_MAX}, b;
    const uint8_t *ends[2] = {f->min, f->max};
    size_t lens[2] = {f->min_len, f->max_len};
    tern_terms_index_walk_init(&w);
    for (int k = 0; k < 2; k++) {
      uint64_t kh = tern_terms_index_key_head(&f->index, ends[k], lens[k]);
      int rc = tern_terms_index_walk_find(&f->index, &w, kh, ends[k], lens[k], &wb[k], &info);
      FUZZ_ASSERT(rc == TERN_ECORRUPT || (rc == TERN_OK && wb[k] < f->nblocks && info.entries >= 1));
      if (rc != TERN_OK) wb[k] = UINT64_MAX;
    }
    /* A group's records are checked on first use: a damaged one fails
     * the lookup, never gives a block outside the field. */
    int rc = tern_terms_index_find(&f->index, f->min, f->min_len, &b);
    FUZZ_ASSERT(rc == TERN_ECORRUPT || (rc == TERN_OK && b < f->nblocks));
    FUZZ_ASSERT(rc != TERN_OK || wb[0] == UINT64_MAX || wb[0] == b);
    rc = tern_terms_index_find(&f->index, f->max, f->max_len, &b);
    FUZZ_ASSERT(rc == TERN_ECORRUPT || (rc == TERN_OK && b < f->nblocks));
    FUZZ_ASSERT(rc != TERN_OK || wb[1] == UINT64_MAX || wb[1] == b);
    rc = tern_terms_index_ensure_all(&f->index);
    FUZZ_ASSERT(rc == TERN_ECORRUPT || rc == TERN_OK);
  }
}

int fuzz_tix(const uint8_t *data, size_t size) {
  uint8_t *framed;
  size_t flen;
  if (tern_frame_wrap(&framed, &flen, TERN_KIND_INDEX, TERN_SEG_VERSION, fuzz_segid, data, size))
    return TERN_ENOMEM;
  const uint8_t *body;
  size_t blen;
  uint32_t version;
  FUZZ_ASSERT(tern_frame_open_buffer(framed, flen, TERN_KIND_INDEX, TERN_SEG_VERSION, fuzz_segid,
                                     "fuzz.tix", &version, &body, &blen) == TERN_OK);
  FUZZ_ASSERT(blen == size && version == TERN_SEG_VERSION);
  tern_seg *s = calloc(1, sizeof *s);
  int rc = s ? tern_seg_parse_index(s, body, blen, "fuzz.tix") : TERN_ENOMEM;
  if (rc == TERN_OK) exercise(s);
  tern_seg_close(s);
  free(framed);
  /* the raw bytes as a whole framed file: the frame's own checks */
  (void)tern_frame_open_buffer(data, size, TERN_KIND_INDEX, TERN_SEG_VERSION, NULL, "fuzz.tix",
                               &version, &body, &blen);
  return rc;
}

FUZZ_DEFINE_ENTRY(fuzz_tix)

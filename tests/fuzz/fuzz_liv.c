/* SPDX-License-Identifier: MIT */
/*
 * fuzz_liv.c — a .liv body (codec/livedocs_format.c), framed with a valid
 * checksum; max_doc and the deleted count are the body's own, as the
 * catalog would agree.  An accepted body is canonical: writing the set
 * back must give the same bytes, and its iterator must count `deleted`.
 */
#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/livedocs.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

#define FUZZ_LIV_WALK (1u << 20)

int fuzz_liv(const uint8_t *data, size_t size) {
  if (size < 8) return TERN_EINVAL;
  uint32_t max_doc = tern_load32(data), deleted = tern_load32(data + 4);
  uint8_t *framed;
  size_t flen;
  if (tern_frame_wrap(&framed, &flen, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, fuzz_segid, data,
                      size))
    return TERN_ENOMEM;
  tern_livedocs *ld;
  int rc = tern_livedocs_read(&ld, framed, flen, fuzz_segid, max_doc, deleted);
  if (rc == TERN_OK) {
    FUZZ_ASSERT(tern_livedocs_deleted(ld) == deleted && tern_livedocs_max_doc(ld) == max_doc);
    /* A few bytes may say "half a billion deleted" (a run): walk them all
     * only when that is quick, else the first FUZZ_LIV_WALK (the write-back
     * below still checks the whole set). */
    tern_ld_iter it;
    tern_livedocs_iter_deleted(&it, ld);
    uint64_t n = 0, walk = deleted <= FUZZ_LIV_WALK ? deleted : FUZZ_LIV_WALK;
    uint32_t prev = 0, d;
    while (n < walk && (d = tern_ld_iter_next(&it)) != TERN_LD_END) {
      FUZZ_ASSERT(d < max_doc && (n == 0 || d > prev));
      FUZZ_ASSERT(!tern_livedocs_is_live(ld, d));
      prev = d;
      n++;
    }
    FUZZ_ASSERT(n == walk);
    if (walk == deleted) FUZZ_ASSERT(tern_ld_iter_next(&it) == TERN_LD_END);
    uint8_t *again;
    size_t alen;
    FUZZ_ASSERT(tern_livedocs_write(ld, fuzz_segid, &again, &alen) == TERN_OK);
    FUZZ_ASSERT(alen == flen && memcmp(again, framed, flen) == 0);
    free(again);
    tern_livedocs_free(ld);
  }
  free(framed);
  return rc;
}

FUZZ_DEFINE_ENTRY(fuzz_liv)

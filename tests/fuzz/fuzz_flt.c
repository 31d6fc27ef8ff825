/* SPDX-License-Identifier: MIT */
/*
 * fuzz_flt.c — a .flt body (codec/filter.c): tern_filter_load (a copy) and
 * tern_filter_open (probed in place, as a segment probes its mapping) must
 * accept and refuse the same bodies and answer every probe alike.
 */
#include "codec/filter.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

int fuzz_flt(const uint8_t *data, size_t size) {
  tern_filter *f, *g;
  int rc = tern_filter_load(&f, data, size, "fuzz.flt");
  int rc2 = tern_filter_open(&g, data, size, "fuzz.flt");
  FUZZ_ASSERT(rc == rc2);
  if (rc != TERN_OK) return rc;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 64; i++) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    FUZZ_ASSERT(tern_filter_may_contain(f, h) == tern_filter_may_contain(g, h));
    size_t off = tern_filter_block_offset(g, h);
    FUZZ_ASSERT(off >= TERN_FILTER_HEADER_SIZE && off + TERN_FILTER_BLOCK_SIZE <= size);
  }
  FUZZ_ASSERT(tern_filter_memory(f) >= size / 2);
  tern_filter_free(f);
  tern_filter_free(g);
  return TERN_OK;
}

FUZZ_DEFINE_ENTRY(fuzz_flt)

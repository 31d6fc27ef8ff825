/*
 * fuzz_flt.c — a .flt body (codec/filter.c, tern_filter_load) and probes
 * of what it accepted.
 */
#include "codec/filter.h"
#include "tern.h"
#include "tests/fuzz/fuzz.h"

int fuzz_flt(const uint8_t *data, size_t size) {
  tern_filter *f;
  int rc = tern_filter_load(&f, data, size, "fuzz.flt");
  if (rc != TERN_OK) return rc;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 64; i++) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    (void)tern_filter_may_contain(f, h);
  }
  FUZZ_ASSERT(tern_filter_memory(f) >= size / 2);
  tern_filter_free(f);
  return TERN_OK;
}

FUZZ_DEFINE_ENTRY(fuzz_flt)

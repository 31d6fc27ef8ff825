/* SPDX-License-Identifier: MIT */
/*
 * test_keymap.c — engine/buffer/keymap.c against a reference (the latest op index
 * of each key, by linear search) on random keys with many repeats, empty
 * and 1,000-byte keys and shared prefixes, through several growths; half
 * the sets reuse the position of the lookup before them, as tern_delete does.
 */
#include "tests/engine/enginetest.h"

#include "engine/buffer/keymap.h"
#include "engine/buffer/memseg.h"

enum { NDISTINCT = 3000, NOPS = 20000 };

static void test_keymap_against_reference(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x6b65796d);
  uint64_t salt = tu_next(&r);
  static uint8_t keys[NDISTINCT][ET_KEY_MAX];
  static size_t klens[NDISTINCT];
  for (uint32_t i = 0; i < NDISTINCT; i++)
    klens[i] = et_key(i, salt, keys[i]);
  klens[0] = 0; /* the empty key too */
  tern_mdoc *ops = malloc(NOPS * sizeof *ops);
  int64_t latest[NDISTINCT];
  for (size_t i = 0; i < NDISTINCT; i++)
    latest[i] = -1;
  tern_keymap m;
  tern_keymap_init(&m);
  for (uint32_t i = 0; i < NOPS; i++) {
    uint32_t id = (uint32_t)tu_below(&r, tu_below(&r, 4) ? 200 : NDISTINCT);
    ops[i] = (tern_mdoc){{keys[id], (uint32_t)klens[id], 0}, NULL};
    tern_keypos pos = TERN_KEYPOS_NONE;
    if (tu_below(&r, 2))
      assert_int_equal(tern_keymap_get(&m, ops, keys[id], klens[id], &pos), latest[id]);
    assert_int_equal(tern_keymap_set(&m, ops, i, pos), TERN_OK);
    latest[id] = i;
    if (i % 997 == 0)
      for (uint32_t k = 0; k < NDISTINCT; k++) {
        tern_keypos p;
        assert_int_equal(tern_keymap_get(&m, ops, keys[k], klens[k], &p), latest[k]);
      }
  }
  size_t distinct = 0;
  for (uint32_t k = 0; k < NDISTINCT; k++) {
    tern_keypos p;
    assert_int_equal(tern_keymap_get(&m, ops, keys[k], klens[k], &p), latest[k]);
    distinct += latest[k] >= 0;
  }
  assert_int_equal(m.n, distinct);
  tern_keymap_free(&m);
  free(ops);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keymap_against_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

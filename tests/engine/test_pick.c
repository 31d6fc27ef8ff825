/* SPDX-License-Identifier: MIT */
/*
 * test_pick.c — engine/util/pick.c, the cheaper of two ways by measured
 * cost: the first runs take each way in turn, the least of them its
 * cost; then the cheaper one,
 * the other exactly once in TERN_PICK_EXPLORE runs when their costs are
 * within 1/8 and once in TERN_PICK_EXPLORE_FAR when further apart; a
 * change of costs moves the choice within the smoothing's runs; runs too
 * small to time (tern_pick2_best) never explore; costs far below a
 * nanosecond a unit or absurdly high stay measured and bounded.
 */
#include "tests/common/testutil.h"

#include "engine/util/pick.h"

#include <string.h>

/* Ways taken in `runs` choices, learning cost[way] ns a unit each time. */
static void choose_runs(tern_pick2 *p, const uint64_t cost[2], unsigned runs, unsigned took[2]) {
  took[0] = took[1] = 0;
  for (unsigned i = 0; i < runs; i++) {
    unsigned w = tern_pick2_choose(p);
    assert_true(w < 2);
    took[w]++;
    tern_pick2_learn(p, w, cost[w] * 1000, 1000);
  }
}

/* p past its start, each way measured TERN_PICK_START times at c[way]. */
static void start_at(tern_pick2 *p, const uint64_t c[2]) {
  memset(p, 0, sizeof *p);
  for (unsigned i = 0; i < 2 * TERN_PICK_START; i++) {
    unsigned w = tern_pick2_choose(p);
    tern_pick2_learn(p, w, c[w], 1);
  }
}

/* The first runs take the two ways in turn, TERN_PICK_START each, however
 * they cost, each way's cost the least of them (the first run, paying a
 * fresh process's faults, decides nothing); past them a run moves the
 * cost 1/8 of the way. */
static void test_start_in_turn(void **state) {
  (void)state;
  tern_pick2 p;
  memset(&p, 0, sizeof p);
  const uint64_t first[2] = {5000, 300}, later[2] = {100, 300};
  for (unsigned i = 0; i < 2 * TERN_PICK_START; i++) {
    assert_int_equal(tern_pick2_best(&p), 0); /* nothing to choose by yet */
    unsigned w = tern_pick2_choose(&p);
    assert_int_equal(w, i % 2);
    tern_pick2_learn(&p, w, i < 2 ? first[w] : later[w], 1);
  }
  assert_int_equal(p.cost[0], 100 * 16);
  assert_int_equal(p.cost[1], 300 * 16);
  assert_int_equal(tern_pick2_best(&p), 0);
  assert_int_equal(tern_pick2_choose(&p), 0);
  tern_pick2_learn(&p, 0, 900, 1); /* 100 + (900 - 100) / 8 */
  assert_int_equal(p.cost[0], 200 * 16);
  tern_pick2_learn(&p, 1, 2700, 1); /* 300 + (2700 - 300) / 8 */
  assert_int_equal(p.cost[1], 600 * 16);
}

static void test_explores_by_distance(void **state) {
  (void)state;
  tern_pick2 p;
  unsigned took[2];
  const uint64_t close[2] = {100, 105}; /* within 1/8 */
  start_at(&p, close);
  choose_runs(&p, close, 16 * TERN_PICK_EXPLORE, took);
  assert_int_equal(took[1], 16);
  assert_int_equal(took[0], 16 * TERN_PICK_EXPLORE - 16);
  const uint64_t far[2] = {300, 100};
  start_at(&p, far);
  choose_runs(&p, far, 4 * TERN_PICK_EXPLORE_FAR, took);
  assert_int_equal(took[0], 4);
  for (unsigned i = 0; i < 1000; i++) assert_int_equal(tern_pick2_best(&p), 1);
}

/* Way 0 cheaper, then way 1 becomes the cheaper one: the choice follows
 * once the explored runs have moved its average. */
static void test_follows_change(void **state) {
  (void)state;
  tern_pick2 p;
  unsigned took[2];
  const uint64_t before[2] = {200, 400};
  start_at(&p, before);
  choose_runs(&p, before, 1000, took);
  assert_true(took[0] > took[1]);
  const uint64_t after[2] = {400, 100};
  choose_runs(&p, after, 40 * TERN_PICK_EXPLORE_FAR, took);
  assert_int_equal(tern_pick2_best(&p), 1);
  assert_true(took[1] > took[0]);
}

static void test_bounds(void **state) {
  (void)state;
  tern_pick2 p;
  memset(&p, 0, sizeof p);
  for (unsigned i = 0; i < TERN_PICK_START; i++) {
    tern_pick2_learn(&p, 0, 1, 1000000); /* a 16th of a ns and less: still measured */
    tern_pick2_learn(&p, 1, UINT64_MAX, 1);
  }
  assert_int_not_equal(p.cost[0], 0);
  assert_true(p.cost[1] <= UINT32_MAX / 2);
  assert_int_equal(tern_pick2_best(&p), 0);
  uint64_t a = tern_pick2_clock(), b = tern_pick2_clock();
  assert_true(b >= a && a > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_in_turn),
      cmocka_unit_test(test_explores_by_distance),
      cmocka_unit_test(test_follows_change),
      cmocka_unit_test(test_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

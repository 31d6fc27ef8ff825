/* SPDX-License-Identifier: MIT */
/* The read-ahead plan of a reader going through a file
 * (codec/read_ahead.h): on random runs of reads (printed seed), forwards
 * and backwards, the asks start after TERN_AHEAD_AFTER reads in a row,
 * stay ahead of every read after that (after it forwards, below it
 * backwards), follow one another without overlap (and without a gap but
 * where a long read went past the last), double from TERN_AHEAD_MIN to
 * TERN_AHEAD_MAX and ask for no more than the reads go past; a read that
 * does not follow the one before (a turn, past the gap, another file)
 * starts over. */
#include "codec/read_ahead.h"
#include "tests/common/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* What the reader asked for so far. */
typedef struct asks {
  uint64_t n, bytes, until, last; /* count, bytes, end of the last, its size */
} asks;

/* One read; checks an ask against the ones before it. */
static int read_one(tern_ahead *a, asks *s, uint64_t file, uint64_t off, uint64_t len) {
  uint64_t from, n;
  if (!tern_ahead_read(a, file, off, len, &from, &n)) return 0;
  assert_true(from >= off + len); /* past the read */
  assert_true(n >= TERN_AHEAD_MIN && n <= TERN_AHEAD_MAX);
  if (s->n) {
    /* the next bytes: no overlap, and no gap unless the read went past
     * the last ask (then from its end) */
    assert_int_equal(from, s->until > off + len ? s->until : off + len);
    assert_int_equal(n, s->last * 2 > TERN_AHEAD_MAX ? TERN_AHEAD_MAX : s->last * 2);
  } else {
    assert_int_equal(n, TERN_AHEAD_MIN);
  }
  s->n++;
  s->bytes += n;
  s->until = from + n;
  s->last = n;
  return 1;
}

/* A run of reads, each following the one before by a gap of at most
 * TERN_AHEAD_GAP (values between frames, say): asks from the fourth on,
 * always ahead of the reads, never more than the run went past plus the
 * largest ask twice. */
static void run_forwards(tu_rng *r, tern_ahead *a, uint64_t file, uint64_t off, uint32_t reads) {
  asks s = {0, 0, 0, 0};
  uint64_t start = off;
  for (uint32_t i = 0; i < reads; i++) {
    uint64_t len = 1 + tu_below(r, tu_below(r, 8) ? 600 : 70000);
    int asked = read_one(a, &s, file, off, len);
    if (i + 1 < TERN_AHEAD_AFTER) assert_false(asked);
    if (i + 1 == TERN_AHEAD_AFTER) assert_true(asked);
    off += len;
    if (i + 1 >= TERN_AHEAD_AFTER) assert_true(s.until > off); /* ahead of the read */
    off += tu_below(r, 4) ? tu_below(r, 17) : TERN_AHEAD_GAP; /* the gap, at most GAP */
  }
  assert_true(s.bytes <= off - start + 2 * TERN_AHEAD_MAX);
}

/* One read of a run backwards; checks an ask against the ones before it
 * (s->until: where the last ask began, going down). */
static int read_back(tern_ahead *a, asks *s, uint64_t file, uint64_t off, uint64_t len) {
  uint64_t from, n;
  if (!tern_ahead_read(a, file, off, len, &from, &n)) return 0;
  assert_true(from + n <= off); /* below the read */
  assert_true(n >= 1 && n <= TERN_AHEAD_MAX);
  uint64_t want = s->n ? (s->last * 2 > TERN_AHEAD_MAX ? TERN_AHEAD_MAX : s->last * 2)
                       : TERN_AHEAD_MIN;
  /* the next bytes down: no overlap, no gap unless the read went below the
   * last ask (then from its start); shorter only at the file's start */
  assert_int_equal(from + n, s->n && s->until < off ? s->until : off);
  assert_true(n == want || (from == 0 && n < want));
  s->n++;
  s->bytes += n;
  s->until = from;
  s->last = want;
  return 1;
}

/* A run of reads going down, each ending at most TERN_AHEAD_GAP before
 * the one after it began: asks from the fourth on, always below the
 * reads, never more than the run went past plus the largest ask twice. */
static void run_backwards(tu_rng *r, tern_ahead *a, uint64_t file, uint64_t off, uint32_t reads) {
  asks s = {0, 0, 0, 0};
  uint64_t top = off;
  for (uint32_t i = 0; i < reads; i++) {
    uint64_t len = 1 + tu_below(r, tu_below(r, 8) ? 600 : 70000);
    if (len > off) break; /* the file's start */
    off -= len;
    int asked = read_back(a, &s, file, off, len);
    if (i + 1 < TERN_AHEAD_AFTER) assert_false(asked);
    if (i + 1 == TERN_AHEAD_AFTER) assert_true(asked);
    if (i + 1 >= TERN_AHEAD_AFTER && off > 0) assert_true(s.until < off); /* below the read */
    uint64_t gap = tu_below(r, 4) ? tu_below(r, 17) : TERN_AHEAD_GAP;
    if (gap > off) break;
    off -= gap;
  }
  assert_true(s.bytes <= top - off + 2 * TERN_AHEAD_MAX);
}

static void test_backwards(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0xbac4);
  for (int round = 0; round < 20; round++) {
    tern_ahead a = {0};
    run_backwards(&r, &a, 1 + tu_below(&r, 5), tu_below(&r, 1u << 30),
                  TERN_AHEAD_AFTER + (uint32_t)tu_below(&r, 20000));
  }
  /* Down to the file's start: the last asks stop at byte 0, then none. */
  tern_ahead a = {0};
  asks s = {0, 0, 0, 0};
  uint64_t off = 3u << 20;
  while (off >= 4096) {
    off -= 4096;
    (void)read_back(&a, &s, 9, off, 4096);
  }
  assert_int_equal(s.until, 0);
  /* A turn forwards after a run backwards starts over. */
  uint64_t from, n;
  assert_false(tern_ahead_read(&a, 9, off + 4096, 4096, &from, &n));
  assert_int_equal(a.run, 1);
}

static void test_forwards(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0xa7ead);
  for (int round = 0; round < 20; round++) {
    tern_ahead a = {0};
    run_forwards(&r, &a, 1 + tu_below(&r, 5), tu_below(&r, 1u << 30),
                 TERN_AHEAD_AFTER + (uint32_t)tu_below(&r, 20000));
  }
}

/* After a run, a read that does not follow starts over: no ask until
 * TERN_AHEAD_AFTER reads in a row again, then TERN_AHEAD_MIN. */
static void test_start_over(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x5ea7);
  for (int kind = 0; kind < 4; kind++) {
    tern_ahead a = {0};
    uint64_t off = 1u << 20, from, n;
    for (int i = 0; i < 200; i++, off += 300)
      (void)tern_ahead_read(&a, 7, off, 300, &from, &n);
    uint64_t file = 7, at = off;
    if (kind == 0) at = off - 301;                  /* a turn backwards */
    if (kind == 1) at = off + TERN_AHEAD_GAP + 1;   /* past the gap */
    if (kind == 2) file = 8;                        /* another file */
    if (kind == 3) at = off + TERN_AHEAD_GAP;       /* at the gap: still follows */
    int asked = tern_ahead_read(&a, file, at, 300, &from, &n);
    if (kind == 3) {
      assert_true(a.run > TERN_AHEAD_AFTER);
      continue;
    }
    assert_false(asked);
    run_forwards(&r, &a, file, at + 300, TERN_AHEAD_AFTER - 2); /* still none */
    assert_int_equal(a.run, TERN_AHEAD_AFTER - 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forwards),
      cmocka_unit_test(test_backwards),
      cmocka_unit_test(test_start_over),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

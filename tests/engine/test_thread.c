/* SPDX-License-Identifier: MIT */
/*
 * test_thread.c — tern_lock_spinning (engine/util/thread.h): mutual
 * exclusion between threads that take it spinning and threads that take
 * it plainly, and the fall-back to sleeping when the holder keeps the lock
 * past the spin (a holder that sleeps 2 ms each time).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "engine/util/thread.h"

#include <stdatomic.h>
#include <time.h>

enum { ROUNDS = 200000 };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long g_count; /* only under g_mu: a lost update shows a broken lock */
static atomic_int g_inside;  /* threads inside at once (must stay 1) */
static atomic_int g_overlap; /* set when two were: asserted by the main thread */

static void critical(long hold_ns) {
  if (atomic_fetch_add(&g_inside, 1) != 0) atomic_store(&g_overlap, 1);
  unsigned long c = g_count;
  if (hold_ns) {
    struct timespec ts = {0, hold_ns};
    nanosleep(&ts, NULL);
  }
  g_count = c + 1;
  atomic_fetch_sub(&g_inside, 1);
}

typedef struct job {
  int spinning;
  int rounds;
  long hold_ns;
} job;

static void *run(void *arg) {
  const job *j = arg;
  for (int i = 0; i < j->rounds; i++) {
    if (j->spinning)
      tern_lock_spinning(&g_mu);
    else
      pthread_mutex_lock(&g_mu);
    critical(j->hold_ns);
    pthread_mutex_unlock(&g_mu);
  }
  return NULL;
}

static void run_pair(job a, job b) {
  g_count = 0;
  pthread_t ta, tb;
  assert_int_equal(pthread_create(&ta, NULL, run, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, run, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(atomic_load(&g_overlap), 0);
  assert_int_equal(g_count, (unsigned long)(a.rounds + b.rounds));
}

static void test_spinning_excludes(void **state) {
  (void)state;
  run_pair((job){1, ROUNDS, 0}, (job){1, ROUNDS, 0});
  run_pair((job){1, ROUNDS, 0}, (job){0, ROUNDS, 0});
}

/* The holder sleeps 2 ms, far past the 30 µs spin: the other thread falls
 * back to a sleeping lock and still gets it every time. */
static void test_long_holder(void **state) {
  (void)state;
  run_pair((job){0, 50, 2000000}, (job){1, 50, 0});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spinning_excludes),
      cmocka_unit_test(test_long_holder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_catalog_race.c — the open-time catalog check against another
 * process's commits: a child commits as fast as it can, each commit
 * growing catalog.mdb (buffered documents, never flushed), while this
 * process runs the pre-check (engine/format/catalog_check.c) and read-only opens
 * in a loop.  No check may call the growing catalog damaged: the size is
 * taken after the meta pages (a commit writes its pages before the meta
 * that claims them), and a failure is only damage when a second read
 * sees it too.  Before, about one open in 100,000 read the size first and
 * got "truncated: N bytes hold fewer than the M pages its meta page
 * claims"; the race is a window of a few instructions, so this test is a
 * stress test: it can miss the old defect, never pass a new false alarm.
 * TERN_TEST_SCALE=n runs n times longer.
 */
#include "tests/engine/enginetest.h"

#include "engine/format/catalog_check.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child: commits until killed. */
static void committer(const char *dir) {
  tern_index *idx;
  if (tern_open(&idx, dir, 0, NULL) != TERN_OK) _exit(2);
  char val[2000];
  memset(val, 'v', sizeof val);
  for (uint32_t i = 0;; i++) {
    tern_txn *t;
    if (tern_txn_begin(&t, idx, 0) != TERN_OK) continue;
    for (uint32_t k = 0; k < 4; k++) {
      char key[24];
      int kl = snprintf(key, sizeof key, "k%08u", i * 4 + k);
      if (tern_put(t, key, (size_t)kl, val, sizeof val, NULL, 0) != TERN_OK) _exit(3);
    }
    int rc = tern_commit(t);
    if (rc != TERN_OK && rc != TERN_EPARTIAL) _exit(4);
  }
}

static void test_precheck_under_commits(void **state) {
  (void)state;
  char *dir = tu_tmpdir("catrace");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* the catalog grows with every commit */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  ET_OK(tern_close(idx));
  char *cat = tu_path(dir, "catalog.mdb");
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) committer(dir);
  uint64_t checks = 0, opens = 0, false_alarms = 0;
  double end = now() + 1.5 * tu_scale();
  while (now() < end) {
    int empty;
    int rc = tern_catalog_precheck(cat, &empty);
    checks++;
    if (rc != TERN_OK) {
      fprintf(stderr, "pre-check: %d %s\n", rc, tern_errmsg());
      false_alarms++;
    }
    if (checks % 1024 == 0) {
      rc = tern_open(&idx, dir, TERN_RDONLY, NULL);
      opens++;
      if (rc == TERN_OK) {
        ET_OK(tern_close(idx));
      } else if (rc == TERN_ECORRUPT) {
        fprintf(stderr, "read-only open: %d %s\n", rc, tern_errmsg());
        false_alarms++;
      }
    }
  }
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status)); /* the child committed until killed */
  print_message("%llu pre-checks and %llu read-only opens during commits: %llu called the "
                "catalog damaged\n",
                (unsigned long long)checks, (unsigned long long)opens,
                (unsigned long long)false_alarms);
  ET_OK(tern_open(&idx, dir, 0, NULL));
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  assert_int_equal(false_alarms, 0);
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_precheck_under_commits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_bench_segments.c — the engine-shape benchmarks, `tern-bench
 * segments` and `tern-bench ingest` (both keys of 16 bytes, tools/bench/
 * hexgets.c), on small inputs: each builds its indexes, checks every
 * present key is found and every absent one is not in each (exit 1
 * otherwise), and prints its table; bad options exit 2.
 */
#include "tests/common/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bench_bin(void) {
  const char *b = getenv("TERN_BENCH_BIN");
  return b && *b && strcmp(b, "none") != 0 ? b : NULL;
}

/* Runs argv with stdout+stderr into `log`; the exit status (or 128+signal). */
static int run(char *const argv[], const char *log) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  assert_true(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *read_log(const char *log) {
  size_t len;
  char *text = (char *)tu_read_file(log, &len);
  text = realloc(text, len + 1);
  assert_non_null(text);
  text[len] = '\0';
  return text;
}

static void test_segments_small_run(void **state) {
  (void)state;
  if (!bench_bin()) {
    fprintf(stderr, "skipped: TERN_BENCH_BIN is unset or \"none\" (tern-bench not built)\n");
    skip();
  }
  char *dir = tu_tmpdir("bench-segments");
  char *log = tu_path(dir, "segments.log");
  char *argv[] = {(char *)bench_bin(), "segments", "--docs", "30000", "--txn", "100",
                  "--segments", "7", "--lookups", "3000", "--rounds", "1", "--dir", dir, NULL};
  int rc = run(argv, log);
  char *text = read_log(log);
  if (rc != 0) fprintf(stderr, "%s", text);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(text, "overlapping (7)"));
  assert_non_null(strstr(text, "compacted (1)"));
  assert_non_null(strstr(text, "incremental ("));
  assert_non_null(strstr(text, "incremental-live (")); /* the writer's own handle */
  assert_non_null(strstr(text, "overlapping-live ("));
  free(text);
  char *bad1[] = {(char *)bench_bin(), "segments", "--txn", "0", NULL};
  assert_int_equal(run(bad1, log), 2);
  char *bad2[] = {(char *)bench_bin(), "segments", "--docs", "10", "--segments", "11", NULL};
  assert_int_equal(run(bad2, log), 2);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* `tern-bench ingest` with both key shapes: 16 segments held, merged by
 * the policy, compacted. */
static void test_ingest_small_run(void **state) {
  (void)state;
  if (!bench_bin()) {
    fprintf(stderr, "skipped: TERN_BENCH_BIN is unset or \"none\" (tern-bench not built)\n");
    skip();
  }
  char *dir = tu_tmpdir("bench-ingest");
  char *log = tu_path(dir, "ingest.log");
  static const char *const shapes[][2] = {{"hex", "(random hex)"}, {"time", "(time-ordered)"}};
  for (size_t i = 0; i < 2; i++) {
    char *argv[] = {(char *)bench_bin(), "ingest", "--docs", "20000", "--segments", "16",
                    "--lookups", "2000", "--rounds", "1", "--keys", (char *)shapes[i][0],
                    "--dir", dir, NULL};
    int rc = run(argv, log);
    char *text = read_log(log);
    if (rc != 0) fprintf(stderr, "%s", text);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(text, shapes[i][1]));
    assert_non_null(strstr(text, "ingested, no merge yet (16)"));
    assert_non_null(strstr(text, "compacted (1)"));
    free(text);
  }
  char *bad[] = {(char *)bench_bin(), "ingest", "--keys", "uuid", NULL};
  assert_int_equal(run(bad, log), 2);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segments_small_run),
      cmocka_unit_test(test_ingest_small_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

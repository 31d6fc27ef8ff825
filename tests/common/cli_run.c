/* SPDX-License-Identifier: MIT */
/*
 * cli_run.c — see cli_run.h.
 */
#include "tests/common/cli_run.h"
#include "tests/common/testutil.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* argv for posix_spawn: bin, then args (a malloc'd array). */
static char **spawn_argv(const char *bin, const char *const *args) {
  size_t n = 0;
  while (args[n])
    n++;
  char **argv = calloc(n + 2, sizeof *argv);
  assert_non_null(argv);
  argv[0] = (char *)bin;
  for (size_t i = 0; i < n; i++)
    argv[i + 1] = (char *)args[i];
  return argv;
}

/* Waits for pid: its exit status, or 128 + the signal that ended it. */
static int wait_code(pid_t pid) {
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

tu_cli_result tu_cli_run(const char *bin, const char *in_path, const char *const *args) {
  char *dir = tu_tmpdir("cli-io");
  char *outpath = tu_path(dir, "stdout"), *errpath = tu_path(dir, "stderr");
  posix_spawn_file_actions_t fa;
  assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
  posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char **argv = spawn_argv(bin, args);
  pid_t pid;
  int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
  if (rc) fail_msg("cannot run %s: %s", bin, strerror(rc));
  tu_cli_result r;
  r.code = wait_code(pid);
  posix_spawn_file_actions_destroy(&fa);
  r.out = (char *)tu_read_file(outpath, &r.outlen);
  r.err = (char *)tu_read_file(errpath, &r.errlen);
  r.out[r.outlen] = r.err[r.errlen] = '\0';
  tu_rmtree(dir);
  free(argv);
  free(outpath);
  free(errpath);
  free(dir);
  return r;
}

tu_cli_result tu_cli_run_bytes(const char *bin, const void *in, size_t inlen,
                               const char *const *args) {
  char *dir = tu_tmpdir("cli-in");
  char *inpath = tu_path(dir, "stdin");
  tu_write_file(inpath, in ? in : "", in ? inlen : 0);
  tu_cli_result r = tu_cli_run(bin, inpath, args);
  tu_rmtree(dir);
  free(inpath);
  free(dir);
  return r;
}

void tu_cli_free(tu_cli_result *r) {
  free(r->out);
  free(r->err);
}

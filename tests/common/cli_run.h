/* SPDX-License-Identifier: MIT */
/*
 * cli_run.h — running a built binary (the `tern` tool, $TERN_BIN) from a
 * test: its arguments as given (no shell), standard input from a file,
 * standard output and error captured whole, the exit status.
 */
#ifndef TERN_TEST_CLI_RUN_H
#define TERN_TEST_CLI_RUN_H

#include <stddef.h>

typedef struct tu_cli_result {
  int code; /* exit status, or 128 + signal */
  char *out, *err; /* NUL-terminated (and may hold NULs before outlen, errlen) */
  size_t outlen, errlen;
} tu_cli_result;

/* Runs `bin args...` (args NULL-terminated) with standard input from the
 * file in_path (NULL: /dev/null); aborts the test when it cannot run. */
tu_cli_result tu_cli_run(const char *bin, const char *in_path, const char *const *args);
/* The same with standard input holding in[0..inlen) (in NULL: empty). */
tu_cli_result tu_cli_run_bytes(const char *bin, const void *in, size_t inlen,
                               const char *const *args);
void tu_cli_free(tu_cli_result *r);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * range.c — the key range of dump, export and delete-range (cli.h): one
 * option table, one set of checks, one prefix-to-bounds rule.
 */
#include <string.h>

#include "cli.h"

int cli_range_options(const char *cmd, int argc, char **argv, int empty_prefix_ok, cli_range *r,
                      int *exit_status) {
  static const struct option longopts[] = {
      {"prefix", required_argument, NULL, 'p'},
      {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  memset(r, 0, sizeof *r);
  int c, bad = 0, given_prefix = 0;
  *exit_status = CLI_FAIL;
  while (!bad && (c = cli_getopt(argc, argv, ":p:f:t:h", longopts)) != -1) {
    switch (c) {
    case 'h': *exit_status = cli_help(cmd); return 0;
    case 'p':
      given_prefix = 1;
      bad = empty_prefix_ok ? cli_prefix_operand(optarg, &r->prefix)
                            : cli_key_operand(optarg, &r->prefix);
      break;
    case 'f': bad = cli_key_operand(optarg, &r->from); break;
    case 't': bad = cli_key_operand(optarg, &r->to); break;
    default: return 0;
    }
  }
  if (bad) return 0;
  if (given_prefix && (r->from.data || r->to.data)) {
    *exit_status = cli_usage_error(cmd, "--prefix excludes --from and --to");
    return 0;
  }
  return 1;
}

/* The shortest key above every key starting with p (trailing 0xff bytes
 * dropped, the last other one incremented): its length, 0 when none. */
static size_t prefix_successor(const uint8_t *p, size_t n, uint8_t *out) {
  while (n > 0 && p[n - 1] == 0xff)
    n--;
  if (n == 0) return 0;
  memcpy(out, p, n);
  out[n - 1]++;
  return n;
}

void cli_range_bounds(const cli_range *r, uint8_t succ[TERN_KEY_MAX], tern_slice *from,
                      tern_slice *to) {
  *from = r->from;
  *to = r->to;
  if (!r->prefix.data) return;
  *from = r->prefix;
  size_t n = prefix_successor(r->prefix.data, r->prefix.len, succ);
  *to = n ? (tern_slice){succ, n} : (tern_slice){NULL, 0};
}

/* SPDX-License-Identifier: MIT */
/*
 * args.c — option parsing shared by the subcommands: getopt_long with
 * tern's error messages, numeric option values, and the creation options.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts) {
  opterr = 0; /* tern reports, with the usage */
  int c = getopt_long(argc, argv, shortopts, longopts, NULL);
  if (c != '?' && c != ':') return c;
  /* The element just parsed; names a long option when it starts with "--". */
  const char *elem = optind > 0 && optind <= argc ? argv[optind - 1] : "";
  int is_long = !strncmp(elem, "--", 2);
  if (c == ':') {
    if (is_long)
      cli_usage_error(argv[0], "option '%s' needs a value", elem);
    else
      cli_usage_error(argv[0], "option -%c needs a value", optopt);
  } else if (optopt) {
    cli_usage_error(argv[0], "unknown option -%c", optopt);
  } else {
    cli_usage_error(argv[0], "unknown option '%s'", elem);
  }
  return '?';
}

int cli_parse_u32(const char *cmd, const char *opt, const char *arg, uint32_t max, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (!*arg || *end || errno || arg[0] < '0' || arg[0] > '9' || v > max) {
    cli_usage_error(cmd, "%s: '%s' is not a number from 0 to %u", opt, arg, max);
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

void cli_create_opts_init(cli_create_opts *co) {
  memset(co, 0, sizeof *co);
  tern_options_init(&co->opts);
}

int cli_create_option(cli_create_opts *co, const char *cmd, int opt, const char *arg) {
  switch (opt) {
  case 'T':
    co->given_threshold = 1;
    return cli_parse_u32(cmd, "--threshold", arg, TERN_THRESHOLD_MAX, &co->opts.pulsing_threshold);
  case 'I':
    co->given_inline = 1;
    return cli_parse_u32(cmd, "--inline-max", arg, TERN_INLINE_MAX, &co->opts.inline_value_max);
  case 'B':
    co->given_bloom = 1;
    return cli_parse_u32(cmd, "--bloom-bits", arg, 64, &co->opts.bloom_bits_per_key);
  default: return -1;
  }
}

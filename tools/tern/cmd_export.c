/* SPDX-License-Identifier: MIT */
/*
 * cmd_export.c — `tern export`: the live documents of a key range, with
 * their terms, as a built segment in OUT (tern_export into a builder made
 * with the index's options), ready to be ingested elsewhere.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

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

static int export_range(const char *dir, const char *out, const tern_slice *from,
                        const tern_slice *to) {
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) return CLI_FAIL;
  tern_options o;
  tern_snapshot *snap = NULL;
  tern_builder *b = NULL;
  const char *what = dir;
  int st = tern_get_options(idx, &o);
  if (!st) st = tern_snapshot_open(&snap, idx);
  if (!st && (st = tern_builder_open(&b, out, &o)) != 0) what = out;
  if (!st && (st = tern_export(snap, from, to, b)) != 0) {
    int rc = cli_fail(dir, st); /* before abort clears the message */
    tern_builder_abort(b);
    tern_snapshot_close(snap);
    return cli_close(idx, dir, rc);
  }
  tern_build_info info;
  if (b && (st = tern_builder_finish(b, &info)) != 0) what = out;
  int rc = st ? cli_fail(what, st) : CLI_OK;
  tern_snapshot_close(snap);
  if (!st) {
    out_str(&g_out, out);
    out_str(&g_out, ": ok, ");
    out_u64(&g_out, info.documents);
    out_str(&g_out, " documents\n");
  }
  return cli_close(idx, dir, rc);
}

int cmd_export(int argc, char **argv) {
  static const struct option longopts[] = {
      {"prefix", required_argument, NULL, 'p'},
      {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  tern_slice from = {NULL, 0}, to = {NULL, 0}, prefix = {NULL, 0};
  int c, bad = 0;
  while (!bad && (c = cli_getopt(argc, argv, ":p:f:t:h", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("export");
    case 'p': bad = cli_key_operand(optarg, &prefix); break;
    case 'f': bad = cli_key_operand(optarg, &from); break;
    case 't': bad = cli_key_operand(optarg, &to); break;
    default: return CLI_FAIL;
    }
  }
  if (bad) return CLI_FAIL;
  if (prefix.data && (from.data || to.data))
    return cli_usage_error("export", "--prefix excludes --from and --to");
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("export", "missing DIR");
  if (nargs < 2) return cli_usage_error("export", "missing OUT");
  if (nargs > 2) return cli_usage_error("export", "unexpected argument '%s'", argv[optind + 2]);
  uint8_t succ[TERN_KEY_MAX];
  if (prefix.data) {
    from = prefix;
    size_t n = prefix_successor(prefix.data, prefix.len, succ);
    if (n) to = (tern_slice){succ, n};
  }
  return export_range(argv[optind], argv[optind + 1], &from, &to);
}

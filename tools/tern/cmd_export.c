/* SPDX-License-Identifier: MIT */
/*
 * cmd_export.c — `tern export`: the live documents of a key range, with
 * their terms, as a built segment in OUT (tern_export into a builder made
 * with the index's options), ready to be ingested elsewhere.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

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
  cli_range r;
  int status;
  if (!cli_range_options("export", argc, argv, 0, &r, &status)) return status;
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("export", "missing DIR");
  if (nargs < 2) return cli_usage_error("export", "missing OUT");
  if (nargs > 2) return cli_usage_error("export", "unexpected argument '%s'", argv[optind + 2]);
  uint8_t succ[TERN_KEY_MAX];
  tern_slice from, to;
  cli_range_bounds(&r, succ, &from, &to);
  return export_range(argv[optind], argv[optind + 1], &from, &to);
}

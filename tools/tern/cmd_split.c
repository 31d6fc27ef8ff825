/* SPDX-License-Identifier: MIT */
/*
 * cmd_split.c — `tern split`: the keys that cut the index's live keys into
 * N parts of about equal size (tern_split_keys), escaped, one a line; or,
 * given a TSV file instead of an index, the same from a sample of its keys
 * (split_sample.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "out.h"

static int split(const char *dir, size_t n) {
  tern_slice *keys = calloc(n, sizeof *keys);
  if (!keys) return cli_error("%s", strerror(ENOMEM));
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) {
    free(keys);
    return CLI_FAIL;
  }
  tern_snapshot *snap;
  int st = tern_snapshot_open(&snap, idx);
  if (!st) {
    st = tern_split_keys(snap, n, keys);
    tern_snapshot_close(snap);
  }
  for (size_t i = 0; !st && i + 1 < n; i++) {
    if (!keys[i].len) continue; /* fewer keys than parts */
    out_escaped(&g_out, keys[i].data, keys[i].len);
    out_char(&g_out, '\n');
  }
  for (size_t i = 0; i + 1 < n; i++)
    free((void *)keys[i].data);
  free(keys);
  return cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
}

int cmd_split(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("split");
    return CLI_FAIL;
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("split", "missing DIR (or FILE)");
  if (nargs < 2) return cli_usage_error("split", "missing N");
  if (nargs > 2) return cli_usage_error("split", "unexpected argument '%s'", argv[optind + 2]);
  uint32_t n;
  if (cli_parse_u32("split", "N", argv[optind + 1], 1u << 20, &n)) return CLI_FAIL;
  if (n == 0) return cli_usage_error("split", "N is 0: 1 part at least");
  const char *from = argv[optind];
  struct stat sb;
  if (!strcmp(from, "-") || (stat(from, &sb) == 0 && !S_ISDIR(sb.st_mode)))
    return cli_split_tsv(from, n);
  return split(from, n);
}

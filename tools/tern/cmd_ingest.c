/* SPDX-License-Identifier: MIT */
/*
 * cmd_ingest.c — `tern ingest`: segments built elsewhere added in one
 * commit; `tern delete-range`: every document of a key range deleted in
 * one commit (whole segments dropped, no per-key write).
 */
#include "cli.h"
#include "out.h"

#include <stdlib.h>
#include <string.h>

int cmd_ingest(int argc, char **argv) {
  static const struct option longopts[] = {
      {"behind", no_argument, NULL, 'b'},
      {"later-wins", no_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  unsigned flags = 0;
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("ingest");
    case 'b': flags |= TERN_INGEST_BEHIND; break;
    case 'l': flags |= TERN_INGEST_LATER_WINS; break;
    default: return CLI_FAIL;
    }
  }
  if (argc - optind < 1) return cli_usage_error("ingest", "missing DIR");
  if (argc - optind < 2) return cli_usage_error("ingest", "missing SEG (a segment's directory)");
  const char *dir = argv[optind];
  tern_index *idx;
  if (cli_open(&idx, dir, 0) != 0) return CLI_FAIL;
  size_t n = (size_t)(argc - optind - 1);
  int st = tern_ingest(idx, (const char *const *)(argv + optind + 1), n, flags);
  return cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
}

/* The first key after every key starting with p (none: all 0xff). */
static int prefix_end(const tern_slice *p, uint8_t *buf, tern_slice *out) {
  size_t n = p->len;
  memcpy(buf, p->data, n);
  while (n && buf[n - 1] == 0xff) n--;
  if (!n) return 0;
  buf[n - 1]++;
  out->data = buf;
  out->len = n;
  return 1;
}

int cmd_delete_range(int argc, char **argv) {
  static const struct option longopts[] = {
      {"prefix", required_argument, NULL, 'p'},
      {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  tern_slice prefix = {0}, from = {0}, to = {0};
  int c, bad = 0;
  while (!bad && (c = cli_getopt(argc, argv, ":p:f:t:h", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("delete-range");
    case 'p': bad = cli_key_operand(optarg, &prefix); break;
    case 'f': bad = cli_key_operand(optarg, &from); break;
    case 't': bad = cli_key_operand(optarg, &to); break;
    default: return CLI_FAIL;
    }
  }
  if (bad) return CLI_FAIL;
  if (prefix.data && (from.data || to.data))
    return cli_usage_error("delete-range", "--prefix excludes --from and --to");
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("delete-range", "missing DIR");
  if (nargs > 1)
    return cli_usage_error("delete-range", "unexpected argument '%s'", argv[optind + 1]);
  uint8_t *end = NULL;
  int has_to = to.data != NULL;
  if (prefix.data) {
    from = prefix;
    end = malloc(prefix.len ? prefix.len : 1);
    if (!end) return cli_error("out of memory");
    has_to = prefix_end(&prefix, end, &to);
  }
  const char *dir = argv[optind];
  tern_index *idx;
  int rc = CLI_FAIL;
  if (cli_open(&idx, dir, 0) == 0) {
    tern_txn *txn;
    int st = tern_txn_begin(&txn, idx, 0);
    if (!st) {
      st = tern_delete_range(txn, from.data ? &from : NULL, has_to ? &to : NULL);
      if (st) tern_abort(txn);
      else st = tern_commit(txn);
    }
    rc = cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
  }
  free(end);
  return rc;
}

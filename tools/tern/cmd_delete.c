/* SPDX-License-Identifier: MIT */
/*
 * cmd_delete.c — `tern delete`: documents by key, in one transaction.
 *
 * A missing key does not stop the others: it is reported, the rest are
 * deleted and committed, and the exit status says some were missing.
 */
#include "cli.h"
#include "out.h"

/* Deletes every key in txn; returns CLI_OK, CLI_MISSING or CLI_FAIL. */
static int delete_all(const char *dir, tern_txn *txn, cli_keys *ks) {
  tern_slice key;
  int more, missing = 0;
  while ((more = cli_keys_next(ks, &key)) > 0) {
    int st = tern_delete(txn, key.data, key.len);
    if (st == TERN_NOTFOUND) {
      missing = 1;
      out_str(&g_err, "not found: ");
      out_escaped(&g_err, key.data, key.len);
      out_char(&g_err, '\n');
    } else if (st) {
      return cli_fail(dir, st);
    }
  }
  if (more < 0) return CLI_FAIL;
  return missing ? CLI_MISSING : CLI_OK;
}

int cmd_delete(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("delete");
    return CLI_FAIL;
  }
  if (argc - optind < 1) return cli_usage_error("delete", "missing DIR");
  if (argc - optind < 2) return cli_usage_error("delete", "missing KEY (or - to read keys)");
  const char *dir = argv[optind];
  cli_keys ks;
  if (cli_keys_open(&ks, argc - optind - 1, argv + optind + 1)) return CLI_FAIL;
  tern_index *idx;
  int rc = CLI_FAIL;
  if (cli_open(&idx, dir, 0) == 0) {
    tern_txn *txn;
    int st = tern_txn_begin(&txn, idx, 0);
    if (st) {
      rc = cli_fail(dir, st);
    } else {
      rc = delete_all(dir, txn, &ks);
      if (rc == CLI_FAIL) {
        tern_abort(txn);
      } else if ((st = tern_commit(txn)) != 0) {
        rc = cli_fail(dir, st);
      }
    }
    rc = cli_close(idx, dir, rc);
  }
  cli_keys_close(&ks);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * cmd_put.c — `tern put`: one document, in one transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int put_document(const char *dir, const tern_slice *key, const tern_slice *val,
                        const tern_term *terms, size_t nterms) {
  tern_index *idx;
  if (cli_open(&idx, dir, 0)) return CLI_FAIL;
  tern_txn *txn;
  int st = tern_txn_begin(&txn, idx, 0), rc = CLI_OK;
  if (!st) {
    st = tern_put(txn, key->data, key->len, val->data, val->len, terms, nterms);
    if (st) {
      rc = cli_fail(dir, st); /* before the abort clears tern_errmsg() */
      tern_abort(txn);
    } else {
      st = tern_commit(txn);
    }
  }
  if (st && rc == CLI_OK) rc = cli_fail(dir, st);
  return cli_close(idx, dir, rc);
}

int cmd_put(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("put");
    return CLI_FAIL;
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("put", "missing DIR");
  if (nargs < 2) return cli_usage_error("put", "missing KEY");
  if (nargs < 3) return cli_usage_error("put", "missing VALUE");
  char **args = argv + optind;
  tern_slice key, val;
  if (cli_key_operand(args[1], &key) || cli_value_operand(args[2], &val)) return CLI_FAIL;
  size_t nterms = (size_t)nargs - 3;
  tern_term *terms = calloc(nterms ? nterms : 1, sizeof *terms);
  if (!terms) return cli_error("%s", strerror(ENOMEM));
  int rc = CLI_OK;
  for (size_t i = 0; i < nterms && rc == CLI_OK; i++)
    if (cli_term_operand(args[3 + i], &terms[i])) rc = CLI_FAIL;
  if (rc == CLI_OK) rc = put_document(args[0], &key, &val, terms, nterms);
  free(terms);
  return rc;
}

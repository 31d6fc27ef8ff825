/* SPDX-License-Identifier: MIT */
/*
 * hello.c — tern in forty lines: create an index, put three documents in
 * one transaction, commit, then read them back from a snapshot by key and
 * in key order.  Build: cc hello.c $(pkg-config --cflags --libs tern)
 * Run: ./hello DIR   (DIR is created when it does not exist)
 */
#include <stdio.h>
#include <string.h>
#include <tern.h>

/* Prints what failed and why, and makes main return 1. */
static int check(int rc, const char *what) {
  if (rc != TERN_OK) fprintf(stderr, "%s: %s (%s)\n", what, tern_strerror(rc), tern_errmsg());
  return rc != TERN_OK;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  tern_index *idx;
  if (check(tern_open(&idx, argv[1], TERN_CREATE, NULL), "open")) return 1;

  /* Write: a document is a key, a value and any number of field:term pairs. */
  static const char *const docs[][3] = {
      {"alice", "engineer", "paris"}, {"bob", "baker", "rome"}, {"carol", "pilot", "paris"}};
  tern_txn *txn;
  if (check(tern_txn_begin(&txn, idx, 0), "begin")) return 1;
  for (size_t i = 0; i < 3; i++) {
    tern_term city = {"city", docs[i][2], strlen(docs[i][2])};
    if (check(tern_put(txn, docs[i][0], strlen(docs[i][0]), docs[i][1], strlen(docs[i][1]),
                       &city, 1), "put")) {
      tern_abort(txn);
      return 1;
    }
  }
  int rc = tern_commit(txn); /* durable once it returns TERN_OK (or TERN_EPARTIAL) */
  if (rc != TERN_EPARTIAL && check(rc, "commit")) return 1;

  /* Read: one snapshot sees the last commit, for as long as it is open. */
  tern_snapshot *snap;
  if (check(tern_snapshot_open(&snap, idx), "snapshot")) return 1;
  char val[64];
  size_t vlen;
  if (check(tern_get(snap, "bob", 3, val, sizeof val, &vlen), "get bob")) return 1;
  printf("get bob: %.*s\n", (int)vlen, val);

  tern_cursor *c;
  if (check(tern_cursor_open(&c, snap, NULL), "cursor")) return 1;
  for (rc = tern_cursor_first(c); rc == TERN_OK; rc = tern_cursor_next(c)) {
    tern_slice k, v;
    if (check(tern_cursor_key(c, &k), "key") || check(tern_cursor_value(c, &v), "value")) return 1;
    printf("scan: %.*s\t%.*s\n", (int)k.len, (const char *)k.data, (int)v.len,
           (const char *)v.data);
  }
  if (rc != TERN_NOTFOUND && check(rc, "scan")) return 1;
  tern_cursor_close(c);
  tern_snapshot_close(snap);
  return check(tern_close(idx), "close");
}

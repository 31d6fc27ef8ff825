/* SPDX-License-Identifier: MIT */
/*
 * cmd_search.c — `tern search`: the live documents having all the terms,
 * in key byte order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "out.h"

typedef struct search_opts {
  int values, count;
} search_opts;

static int print_hit(void *payload, tern_slice key, tern_slice val) {
  const search_opts *o = payload;
  out_escaped(&g_out, key.data, key.len);
  if (o->values) {
    out_char(&g_out, '\t');
    out_escaped(&g_out, val.data, val.len);
  }
  out_char(&g_out, '\n');
  return 0;
}

static int count_matches(tern_postings *p) {
  uint64_t doc, n = 0;
  int st;
  while ((st = tern_postings_next(p, &doc)) == TERN_OK && doc != TERN_NO_MORE_DOCS)
    n++;
  if (st == TERN_OK) {
    out_u64(&g_out, n);
    out_char(&g_out, '\n');
  }
  return st;
}

/* Keys in key byte order: tern_postings_each_by_key walks each segment's
 * primary-key blocks forward instead of seeking every hit's key. */
static int print_matches(tern_postings *p, const search_opts *o) {
  if (o->count) return count_matches(p);
  return tern_postings_each_by_key(p, o->values, print_hit, (void *)o);
}

typedef struct search_args {
  const tern_term *terms;
  size_t n;
  const search_opts *o;
} search_args;

static int search_snapshot(tern_snapshot *snap, const char *dir, void *ctx) {
  const search_args *a = ctx;
  tern_postings *p;
  int st = tern_postings_open(&p, snap, a->terms, a->n);
  if (!st) {
    st = print_matches(p, a->o);
    if (st) cli_fail(dir, st); /* before the close clears tern_errmsg() */
    tern_postings_close(p);
  } else {
    cli_fail(dir, st);
  }
  return st;
}

static int search(const char *dir, const tern_term *terms, size_t n, const search_opts *o) {
  search_args a = {terms, n, o};
  return cli_on_snapshot(dir, search_snapshot, &a);
}

int cmd_search(int argc, char **argv) {
  static const struct option longopts[] = {
      {"values", no_argument, NULL, 'v'},
      {"count", no_argument, NULL, 'c'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  search_opts o = {0, 0};
  int c;
  while ((c = cli_getopt(argc, argv, ":vch", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("search");
    case 'v': o.values = 1; break;
    case 'c': o.count = 1; break;
    default: return CLI_FAIL;
    }
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("search", "missing DIR");
  if (nargs < 2) return cli_usage_error("search", "missing field:term");
  size_t n = (size_t)nargs - 1;
  tern_term *terms = calloc(n, sizeof *terms);
  if (!terms) return cli_error("%s", strerror(ENOMEM));
  int rc = CLI_OK;
  for (size_t i = 0; i < n && rc == CLI_OK; i++)
    if (cli_term_operand(argv[optind + 1 + i], &terms[i])) rc = CLI_FAIL;
  if (rc == CLI_OK) rc = search(argv[optind], terms, n, &o);
  free(terms);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * cmd_dump.c — `tern dump`: every live document with its value and all its
 * terms, in key byte order, as `import` reads them (tern_docs_each), so
 * that `tern dump A | tern import B` makes B answer as A does.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

/* A field in escaped form, with ':' as \x3a too: a term column splits at
 * its first raw ':'. */
static void out_field(const char *f) {
  for (const char *p = f, *colon; *p; p = colon + 1) {
    colon = strchr(p, ':');
    out_escaped(&g_out, p, colon ? (size_t)(colon - p) : strlen(p));
    if (!colon) break;
    out_str(&g_out, "\\x3a");
  }
}

static int print_doc(void *payload, tern_slice key, tern_slice val, const tern_term *terms,
                     size_t nterms) {
  (void)payload;
  out_escaped(&g_out, key.data, key.len);
  out_char(&g_out, '\t');
  out_escaped(&g_out, val.data, val.len);
  for (size_t i = 0; i < nterms; i++) {
    out_char(&g_out, '\t');
    out_field(terms[i].field);
    out_char(&g_out, ':');
    out_escaped(&g_out, terms[i].term, terms[i].len);
  }
  out_char(&g_out, '\n');
  return g_out.err ? 1 : 0; /* a failed write (a closed pipe) ends the dump */
}

static int dump_snapshot(tern_snapshot *snap, const char *dir, void *ctx) {
  int st = tern_docs_each(snap, ctx, print_doc, NULL);
  if (st == TERN_ESTOPPED) st = TERN_OK; /* the write error: out_finish reports it */
  if (st) cli_fail(dir, st);
  return st;
}

static int dump(const char *dir, const tern_bounds *b) {
  return cli_on_snapshot(dir, dump_snapshot, (void *)b);
}

int cmd_dump(int argc, char **argv) {
  cli_range r;
  int status;
  if (!cli_range_options("dump", argc, argv, 1, &r, &status)) return status;
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("dump", "missing DIR");
  if (nargs > 1) return cli_usage_error("dump", "unexpected argument '%s'", argv[optind + 1]);
  tern_bounds b;
  memset(&b, 0, sizeof b);
  b.prefix = r.prefix;
  b.from = r.from;
  b.to = r.to;
  return dump(argv[optind], &b);
}

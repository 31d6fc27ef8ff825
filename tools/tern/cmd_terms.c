/* SPDX-License-Identifier: MIT */
/*
 * cmd_terms.c — `tern terms`: a field's terms in byte order with their
 * live document counts, through a terms enumeration.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

typedef struct terms_opts {
  tern_slice prefix;
  uint64_t limit;
} terms_opts;

static int starts_with(const tern_slice *t, const tern_slice *p) {
  return t->len >= p->len && (p->len == 0 || !memcmp(t->data, p->data, p->len));
}

static int list_terms(tern_terms *te, const terms_opts *o) {
  int st = o->prefix.len ? tern_terms_seek_ceil(te, o->prefix.data, o->prefix.len, NULL)
                         : tern_terms_next(te);
  for (uint64_t n = 0; st == TERN_OK && n < o->limit; n++) {
    tern_slice t;
    uint64_t df;
    if ((st = tern_terms_term(te, &t)) != 0 || (st = tern_terms_docfreq(te, &df)) != 0) return st;
    if (!starts_with(&t, &o->prefix)) break;
    out_escaped(&g_out, t.data, t.len);
    out_char(&g_out, '\t');
    out_u64(&g_out, df);
    out_char(&g_out, '\n');
    st = tern_terms_next(te);
  }
  return st == TERN_NOTFOUND ? TERN_OK : st;
}

typedef struct terms_args {
  const char *field;
  const terms_opts *o;
} terms_args;

static int terms_snapshot(tern_snapshot *snap, const char *dir, void *ctx) {
  const terms_args *a = ctx;
  tern_terms *te;
  int st = tern_terms_open(&te, snap, a->field);
  if (!st) {
    st = list_terms(te, a->o);
    if (st) cli_fail(dir, st); /* before the close clears tern_errmsg() */
    tern_terms_close(te);
  } else {
    cli_fail(dir, st);
  }
  return st;
}

static int terms(const char *dir, const char *field, const terms_opts *o) {
  terms_args a = {field, o};
  return cli_on_snapshot(dir, terms_snapshot, &a);
}

int cmd_terms(int argc, char **argv) {
  static const struct option longopts[] = {
      {"prefix", required_argument, NULL, 'p'},
      {"limit", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  terms_opts o = {{NULL, 0}, UINT64_MAX};
  int c;
  while ((c = cli_getopt(argc, argv, ":p:n:h", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("terms");
    case 'p':
      if (cli_prefix_operand(optarg, &o.prefix)) return CLI_FAIL;
      break;
    case 'n':
      if (cli_parse_limit("terms", optarg, &o.limit)) return CLI_FAIL;
      break;
    default: return CLI_FAIL;
    }
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("terms", "missing DIR");
  if (nargs < 2) return cli_usage_error("terms", "missing FIELD");
  if (nargs > 2) return cli_usage_error("terms", "unexpected argument '%s'", argv[optind + 2]);
  const char *field;
  if (cli_field_operand(argv[optind + 1], &field)) return CLI_FAIL;
  return terms(argv[optind], field, &o);
}

/* SPDX-License-Identifier: MIT */
/*
 * cmd_scan.c — `tern scan`: live documents in key byte order through a
 * key cursor, within --prefix or [--from, --to), either way, with a limit.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

typedef struct scan_opts {
  tern_bounds b;
  int reverse, keys_only, count, given_prefix;
  uint64_t limit; /* UINT64_MAX: none */
} scan_opts;

static void print_doc(tern_cursor *c, const scan_opts *o, const tern_slice *key, int *st) {
  out_escaped(&g_out, key->data, key->len);
  if (!o->keys_only) {
    tern_slice val;
    if ((*st = tern_cursor_value(c, &val)) != 0) return;
    out_char(&g_out, '\t');
    out_escaped(&g_out, val.data, val.len);
  }
  out_char(&g_out, '\n');
}

static int scan_cursor(tern_cursor *c, const scan_opts *o) {
  uint64_t n = 0;
  int st = o->reverse ? tern_cursor_last(c) : tern_cursor_first(c);
  while (st == TERN_OK && n < o->limit) {
    n++;
    if (!o->count) {
      tern_slice key;
      st = tern_cursor_key(c, &key);
      if (st == TERN_OK) print_doc(c, o, &key, &st);
      if (st != TERN_OK) return st;
    }
    st = o->reverse ? tern_cursor_prev(c) : tern_cursor_next(c);
  }
  if (st != TERN_OK && st != TERN_NOTFOUND) return st;
  if (o->count) {
    out_u64(&g_out, n);
    out_char(&g_out, '\n');
  }
  return TERN_OK;
}

static int scan_snapshot(tern_snapshot *snap, const char *dir, void *ctx) {
  const scan_opts *o = ctx;
  tern_cursor *c;
  int st = tern_cursor_open(&c, snap, &o->b);
  if (!st) {
    st = scan_cursor(c, o);
    if (st) cli_fail(dir, st); /* before the close clears tern_errmsg() */
    tern_cursor_close(c);
  } else {
    cli_fail(dir, st);
  }
  return st;
}

static int scan(const char *dir, const scan_opts *o) {
  return cli_on_snapshot(dir, scan_snapshot, (void *)o);
}

int cmd_scan(int argc, char **argv) {
  static const struct option longopts[] = {
      {"prefix", required_argument, NULL, 'p'}, {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 't'},     {"reverse", no_argument, NULL, 'r'},
      {"limit", required_argument, NULL, 'n'},  {"keys-only", no_argument, NULL, 'k'},
      {"count", no_argument, NULL, 'c'},        {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  scan_opts o;
  memset(&o, 0, sizeof o);
  o.limit = UINT64_MAX;
  int c, bad = 0;
  while (!bad && (c = cli_getopt(argc, argv, ":p:f:t:rn:kch", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("scan");
    case 'p': bad = cli_prefix_operand(optarg, &o.b.prefix); o.given_prefix = 1; break;
    case 'f': bad = cli_key_operand(optarg, &o.b.from); break;
    case 't': bad = cli_key_operand(optarg, &o.b.to); break;
    case 'r': o.reverse = 1; break;
    case 'n': bad = cli_parse_limit("scan", optarg, &o.limit); break;
    case 'k': o.keys_only = 1; break;
    case 'c': o.count = 1; break;
    default: return CLI_FAIL;
    }
  }
  if (bad) return CLI_FAIL;
  if (o.given_prefix && (o.b.from.data || o.b.to.data))
    return cli_usage_error("scan", "--prefix excludes --from and --to");
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("scan", "missing DIR");
  if (nargs > 1) return cli_usage_error("scan", "unexpected argument '%s'", argv[optind + 1]);
  return scan(argv[optind], &o);
}

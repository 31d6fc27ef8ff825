/* SPDX-License-Identifier: MIT */
/*
 * opts.c — the table-driven option parser and usage printer of tern-bench
 * (see opts.h).  The defaults go through the same parsing as argv, so a
 * default that the table could not parse is a bug caught at the first run.
 */
#include "tools/bench/opts.h"

#include "tools/bench/bench_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define USAGE_COL 24 /* where the help text starts */

static void *field_at(void *opts, size_t off) { return (char *)opts + off; }

static int in_range(const bench_opt *d, double v) {
  return v >= d->min && (d->max == 0 || v <= d->max);
}

static int parse_number(const bench_opt *d, const char *text, void *field) {
  if (d->kind == BENCH_OPT_U64) {
    uint64_t v;
    if (bench_parse_u64(text, &v) || !in_range(d, (double)v)) return -1;
    *(uint64_t *)field = v;
    return 0;
  }
  double v;
  if (bench_parse_double(text, &v) || !in_range(d, v)) return -1;
  *(double *)field = v;
  return 0;
}

/* Parses a list into a malloc'd array (replacing the default's); every
 * element within the bounds. */
static int apply_list(const bench_opt *d, const char *text, void *opts) {
  size_t n, *count = field_at(opts, d->count_off);
  uint64_t *u = NULL;
  double *f = NULL;
  int rc = d->kind == BENCH_OPT_U64_LIST ? bench_parse_u64_list(text, &u, &n)
                                         : bench_parse_double_list(text, &f, &n);
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (!in_range(d, u ? (double)u[i] : f[i])) rc = -1;
  if (rc) {
    free(u);
    free(f);
    return -1;
  }
  if (u) {
    uint64_t **field = field_at(opts, d->off);
    free(*field);
    *field = u;
  } else {
    double **field = field_at(opts, d->off);
    free(*field);
    *field = f;
  }
  *count = n;
  return 0;
}

/* 1 + the position of `text` among the '|'-separated words, 0 if absent. */
static int choice_of(const char *choices, const char *text) {
  size_t len = strlen(text);
  int pos = 1;
  for (const char *p = choices; *p; pos++) {
    const char *bar = strchr(p, '|');
    size_t wl = bar ? (size_t)(bar - p) : strlen(p);
    if (wl == len && !strncmp(p, text, len)) return pos;
    if (!bar) break;
    p = bar + 1;
  }
  return 0;
}

/* The bits of the comma-separated words of `text` among `choices`; 0 when
 * a word is not one of them. */
static int set_of(const char *choices, const char *text) {
  int bits = 0;
  char word[64];
  for (const char *p = text; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= sizeof word) return 0;
    memcpy(word, p, len);
    word[len] = '\0';
    int pos = choice_of(choices, word);
    if (!pos) return 0;
    bits |= 1 << (pos - 1);
    p += len + (comma != NULL);
  }
  return bits;
}

/* Stores one option's value; 0 or -1 (bad value). */
static int apply(const bench_opt *d, const char *text, void *opts) {
  void *field = field_at(opts, d->off);
  switch (d->kind) {
  case BENCH_OPT_U64:
  case BENCH_OPT_DOUBLE: return parse_number(d, text, field);
  case BENCH_OPT_STR: *(const char **)field = text; return 0;
  case BENCH_OPT_FLAG: *(int *)field = d->set; return 0;
  case BENCH_OPT_U64_LIST:
  case BENCH_OPT_DOUBLE_LIST: return apply_list(d, text, opts);
  case BENCH_OPT_CHOICE: return (*(int *)field = choice_of(d->choices, text)) ? 0 : -1;
  case BENCH_OPT_SET: return (*(int *)field = set_of(d->choices, text)) ? 0 : -1;
  case BENCH_OPT_U64_SET: {
    bench_opt_u64 *u = field;
    bench_opt as_u64 = *d;
    as_u64.kind = BENCH_OPT_U64;
    u->set = 1;
    return parse_number(&as_u64, text, &u->v);
  }
  case BENCH_OPT_CUSTOM: return d->parse(text, field);
  }
  return -1;
}

static int refuse(const bench_cmd *cmd, const char *what, const char *name, const char *value) {
  fprintf(stderr, "tern-bench %s: %s%s%s%s%s\n", cmd->name, what, name ? " --" : "",
          name ? name : "", value ? ": " : "", value ? value : "");
  fprintf(stderr, "(`tern-bench %s --help` lists the options)\n", cmd->name);
  return -1;
}

static int apply_defaults(const bench_cmd *cmd, void *opts) {
  memset(opts, 0, cmd->struct_size);
  for (size_t i = 0; i < cmd->nopts; i++) {
    const bench_opt *d = &cmd->opts[i];
    if (d->def && apply(d, d->def, opts) != 0)
      return refuse(cmd, "bad default for", d->name, d->def);
  }
  return 0;
}

static const bench_opt *find(const bench_cmd *cmd, const char *name, size_t len) {
  for (size_t i = 0; i < cmd->nopts; i++)
    if (strlen(cmd->opts[i].name) == len && !strncmp(cmd->opts[i].name, name, len))
      return &cmd->opts[i];
  return NULL;
}

/* One argument (and the next, for a value) at *i; 0, 1 (help) or -1. */
static int parse_one(const bench_cmd *cmd, void *opts, int argc, char **argv, int *i, int *npos) {
  const char *a = argv[*i];
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
    bench_opts_usage(cmd, stdout);
    return 1;
  }
  if (strncmp(a, "--", 2) != 0) {
    if (!cmd->positional || (*npos)++) return refuse(cmd, "unexpected argument", NULL, a);
    *(const char **)field_at(opts, cmd->pos_off) = a;
    return 0;
  }
  const char *eq = strchr(a + 2, '=');
  size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
  const bench_opt *d = find(cmd, a + 2, len);
  if (!d) return refuse(cmd, "unknown option", NULL, a);
  const char *value = eq ? eq + 1 : NULL;
  if (d->kind == BENCH_OPT_FLAG) {
    if (value) return refuse(cmd, "takes no value:", d->name, NULL);
  } else if (!value) {
    if (*i + 1 >= argc) return refuse(cmd, "missing value for", d->name, NULL);
    value = argv[++*i];
  }
  return apply(d, value, opts) ? refuse(cmd, "bad value for", d->name, value) : 0;
}

int bench_opts_parse(const bench_cmd *cmd, void *opts, int argc, char **argv) {
  if (apply_defaults(cmd, opts)) return -1;
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    int rc = parse_one(cmd, opts, argc, argv, &i, &npos);
    if (rc) return rc;
  }
  if (cmd->positional && !npos) return refuse(cmd, "missing", NULL, cmd->positional);
  const char *why = cmd->check ? cmd->check(opts) : NULL;
  return why ? refuse(cmd, why, NULL, NULL) : 0;
}

void bench_opts_free(const bench_cmd *cmd, void *opts) {
  for (size_t i = 0; i < cmd->nopts; i++) {
    const bench_opt *d = &cmd->opts[i];
    if (d->kind == BENCH_OPT_U64_LIST) {
      uint64_t **field = field_at(opts, d->off);
      free(*field);
      *field = NULL;
    } else if (d->kind == BENCH_OPT_DOUBLE_LIST) {
      double **field = field_at(opts, d->off);
      free(*field);
      *field = NULL;
    }
  }
}

/* Prints `text` from column USAGE_COL, continuation lines indented alike. */
static void print_help_text(FILE *out, const char *text, const char *def, int is_flag) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    fprintf(out, "%.*s", (int)len, p);
    if (!nl) break;
    fprintf(out, "\n%*s", USAGE_COL, "");
    p = nl + 1;
  }
  if (def && is_flag)
    fprintf(out, " (default)");
  else if (def)
    fprintf(out, " (%s)", *def ? def : "none");
  fputc('\n', out);
}

void bench_opts_usage(const bench_cmd *cmd, FILE *out) {
  fprintf(out, "tern-bench %s %s   %s\n", cmd->name, cmd->synopsis, cmd->summary);
  for (size_t i = 0; i < cmd->nopts; i++) {
    const bench_opt *d = &cmd->opts[i];
    char head[64];
    int is_flag = d->kind == BENCH_OPT_FLAG;
    int n = snprintf(head, sizeof head, "  --%s%s%s", d->name, is_flag ? "" : " ",
                     is_flag  ? ""
                     : d->arg ? d->arg
                              : "X");
    if (n < 0) n = 0;
    fprintf(out, "%-*s", USAGE_COL, head);
    if (n >= USAGE_COL) fprintf(out, "\n%*s", USAGE_COL, "");
    print_help_text(out, d->help ? d->help : "", d->def, is_flag);
  }
}

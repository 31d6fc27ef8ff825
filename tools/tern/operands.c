/* SPDX-License-Identifier: MIT */
/*
 * operands.c — keys, values and terms from the command line and from
 * standard input, in the escaped form of escape.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tsv.h"

/* Reports a malformed operand; `what` names its role. */
static int bad_operand(const char *what, const char *orig, const tsv_error *err) {
  char quoted[CLI_QUOTE_MAX];
  cli_error("%s '%s': %s", what, cli_quote(orig, strlen(orig), quoted), err->reason);
  return -1;
}

/* Runs a decoder on a copy first, so that a failure can quote the operand as
 * typed (decoding in place destroys it). */
static char *keep_copy(const char *arg) {
  char *copy = strdup(arg);
  if (!copy) cli_error("%s", strerror(ENOMEM));
  return copy;
}

int cli_key_operand(char *arg, tern_slice *key) {
  char *orig = keep_copy(arg);
  if (!orig) return -1;
  tsv_error err;
  size_t len = 0;
  int rc = tsv_parse_key(arg, strlen(arg), &len, &err) ? bad_operand("key", orig, &err) : 0;
  free(orig);
  key->data = arg;
  key->len = len;
  return rc;
}

int cli_value_operand(char *arg, tern_slice *val) {
  char *orig = keep_copy(arg);
  if (!orig) return -1;
  tsv_error err;
  size_t len = 0;
  int rc = tsv_parse_value(arg, strlen(arg), &len, &err) ? bad_operand("value", orig, &err) : 0;
  free(orig);
  val->data = arg;
  val->len = len;
  return rc;
}

int cli_term_operand(char *arg, tern_term *term) {
  char *orig = keep_copy(arg);
  if (!orig) return -1;
  tsv_error err;
  int rc = tsv_parse_term(arg, strlen(arg), term, &err) ? bad_operand("term", orig, &err) : 0;
  free(orig);
  return rc;
}

int cli_prefix_operand(char *arg, tern_slice *prefix) {
  char *orig = keep_copy(arg);
  if (!orig) return -1;
  tsv_error err;
  size_t len = 0;
  int rc = tsv_parse_value(arg, strlen(arg), &len, &err);
  if (!rc && len > TERN_KEY_MAX) {
    snprintf(err.reason, sizeof err.reason, "prefix longer than %u bytes", TERN_KEY_MAX);
    rc = -1;
  }
  if (rc) rc = bad_operand("prefix", orig, &err);
  free(orig);
  prefix->data = len ? arg : NULL;
  prefix->len = len;
  return rc;
}

int cli_field_operand(char *arg, const char **field) {
  char *orig = keep_copy(arg);
  if (!orig) return -1;
  tsv_error err;
  int rc = tsv_parse_field(arg, strlen(arg), &err) ? bad_operand("field", orig, &err) : 0;
  free(orig);
  *field = arg;
  return rc;
}

int cli_keys_open(cli_keys *ks, int nargs, char **args) {
  memset(ks, 0, sizeof *ks);
  ks->args = args;
  ks->nargs = nargs;
  if (nargs != 1 || strcmp(args[0], "-")) return 0;
  ks->from_stdin = 1;
  ks->rd = malloc(sizeof *ks->rd);
  if (!ks->rd || tsv_reader_init(ks->rd, 0, 1 << 20)) {
    free(ks->rd);
    ks->rd = NULL;
    return cli_error("%s", strerror(ENOMEM)), -1;
  }
  return 0;
}

static int next_line_key(cli_keys *ks, tern_slice *key) {
  char *line;
  size_t len = 0;
  int rc;
  while ((rc = tsv_read_line(ks->rd, &line, &len)) > 0) {
    char *tab = memchr(line, '\t', len);
    if (tab) len = (size_t)(tab - line);
    if (len == 0 && !tab) continue; /* blank line */
    tsv_error err;
    size_t klen;
    if (tsv_parse_key(line, len, &klen, &err)) {
      cli_line_error(NULL, ks->rd->line, err.reason);
      return -1;
    }
    key->data = line;
    key->len = klen;
    return 1;
  }
  if (rc == 0) return 0;
  cli_error("standard input: %s", strerror(-rc));
  return -1;
}

int cli_keys_next(cli_keys *ks, tern_slice *key) {
  if (ks->from_stdin) return next_line_key(ks, key);
  if (ks->next >= ks->nargs) return 0;
  return cli_key_operand(ks->args[ks->next++], key) ? -1 : 1;
}

void cli_keys_close(cli_keys *ks) {
  if (ks->rd) tsv_reader_free(ks->rd);
  free(ks->rd);
  ks->rd = NULL;
}

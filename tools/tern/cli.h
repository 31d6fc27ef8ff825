/* SPDX-License-Identifier: MIT */
/*
 * cli.h — what the parts of the `tern` command share: exit codes, the
 * subcommands, usage texts, error reports and opening an index.
 *
 * Every subcommand is `int cmd_x(int argc, char **argv)` with argv[0] its own
 * name, returning the process's exit code.  Errors are reported where they
 * are detected, as one line "tern: WHAT: cause" on stderr.
 */
#ifndef TERN_CLI_H
#define TERN_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "tern.h"

enum {
  CLI_OK = 0,      /* success */
  CLI_MISSING = 1, /* some keys were not found (get, delete) */
  CLI_FAIL = 2,    /* usage error or failure */
  CLI_CORRUPT = 3, /* verify found the index unsound */
};

int cmd_create(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_compact(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_terms(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_split(int argc, char **argv);
/* split_sample.c: `tern split FILE N`, the cut keys of a TSV input's keys
 * from a sample (FILE "-": standard input).  Returns the exit code. */
int cli_split_tsv(const char *file, size_t parts);
int cmd_export(int argc, char **argv);
/* verify_built.c: whether dir holds a built segment (segment files, no
 * catalog), and `tern verify` of one (returns the exit code). */
int cli_is_built_segment(const char *dir);
int cli_verify_built(const char *dir);
int cmd_ingest(int argc, char **argv);
int cmd_delete_range(int argc, char **argv);
int cmd_dump(int argc, char **argv);
/* limit.c: --limit N of scan and terms; 0, or -1 after reporting. */
int cli_parse_limit(const char *cmd, const char *arg, uint64_t *out);

/* usage.c.  `cmd` names a subcommand, or is NULL for the overview. */
/* Prints the usage of `cmd` to stdout; returns CLI_OK (for --help). */
int cli_help(const char *cmd);
/* Prints "tern CMD: <message>" and the usage of `cmd` to stderr; returns
 * CLI_FAIL. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether `cmd` is a subcommand with a usage text. */
int cli_has_usage(const char *cmd);

/* report.c */
/* Prints "tern: WHAT: cause" for a tern status; returns CLI_FAIL. */
int cli_fail(const char *what, int status);
/* Prints "tern: " and the message; returns CLI_FAIL. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* `s` for a message: whole when at most CLI_QUOTE_KEEP bytes, else its
 * first CLI_QUOTE_KEEP bytes and "…(N bytes)", so that a 16 MiB operand
 * does not fill the terminal.  Writes into `out`; returns it. */
enum { CLI_QUOTE_KEEP = 64, CLI_QUOTE_MAX = CLI_QUOTE_KEEP + 40 };
const char *cli_quote(const char *s, size_t len, char out[CLI_QUOTE_MAX]);
/* "1 document", "2 documents": `one` and `many` by n. */
const char *cli_plural(uint64_t n, const char *one, const char *many);

/* Prints "FILE:LINE: reason" (or "LINE: reason" without a file name) for a
 * malformed input line; returns CLI_FAIL. */
int cli_line_error(const char *file, uint64_t line, const char *reason);

/* args.c */
/* getopt_long over a subcommand's arguments, reporting unknown options and
 * missing option arguments with the subcommand's usage.  Returns the option,
 * -1 after the last, or '?' after an error was reported (exit CLI_FAIL). */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/* Parses a decimal option value in [0, max]; on error reports it and
 * returns -1. */
int cli_parse_u32(const char *cmd, const char *opt, const char *arg, uint32_t max, uint32_t *out);

/* size.c: "512M", "1G", "300000000" (K, M, G: powers of 1024) as bytes;
 * 0, or -1 when malformed (nothing reported). */
int cli_parse_size(const char *arg, uint64_t *out);

/* The options an index is created with, and which the user gave. */
typedef struct cli_create_opts {
  tern_options opts;
  int given_threshold, given_inline, given_bloom;
  unsigned open_flags; /* added to tern_open's (0 unless the command sets them) */
} cli_create_opts;
/* The long options of creation, for the option tables of create and import. */
#define CLI_CREATE_LONGOPTS                                                                        \
  {"threshold", required_argument, NULL, 'T'}, {"inline-max", required_argument, NULL, 'I'}, {     \
    "bloom-bits", required_argument, NULL, 'B'                                                     \
  }
void cli_create_opts_init(cli_create_opts *co);
/* Handles option `opt` ('T', 'I' or 'B'); returns 0, or -1 after reporting. */
int cli_create_option(cli_create_opts *co, const char *cmd, int opt, const char *arg);

/* operands.c — keys, values and terms given as arguments, decoded in place
 * (argv strings are writable); errors are reported as
 * "tern: key 'ARG': reason". Each returns 0, or -1 after reporting. */
int cli_key_operand(char *arg, tern_slice *key);
int cli_value_operand(char *arg, tern_slice *val);
int cli_term_operand(char *arg, tern_term *term);
/* A --prefix: escaped as a key, but '' is allowed and means no prefix
 * (every key or term starts with it). */
int cli_prefix_operand(char *arg, tern_slice *prefix);
/* A field name (terms FIELD), escaped as the field of search's field:term;
 * NUL-terminated in place. */
int cli_field_operand(char *arg, const char **field);

/* range.c — the key range of dump, export and delete-range: --prefix P, or
 * --from K and/or --to K (escaped as keys; --prefix excludes the others). */
typedef struct cli_range {
  tern_slice prefix, from, to; /* data NULL: not given */
} cli_range;
/* Parses cmd's options (those three and --help): 1 with optind at the
 * operands, or 0 with the status to exit with in *exit_status (help shown,
 * or an error reported).  empty_prefix_ok: --prefix '' means no prefix
 * (every key starts with it), else it is a bad key. */
int cli_range_options(const char *cmd, int argc, char **argv, int empty_prefix_ok, cli_range *r,
                      int *exit_status);
/* The range as [*from, *to): a prefix becomes [prefix, its successor),
 * built in succ; to->data NULL: no upper bound; from->data NULL: none. */
void cli_range_bounds(const cli_range *r, uint8_t succ[TERN_KEY_MAX], tern_slice *from,
                      tern_slice *to);

/* The keys of get and delete: the operands, or with the single operand "-"
 * the lines of standard input (each up to its first TAB). */
typedef struct cli_keys {
  char **args;
  int nargs, next;
  int from_stdin;
  struct tsv_reader *rd;
} cli_keys;
int cli_keys_open(cli_keys *ks, int nargs, char **args);
/* Returns 1 with the next decoded key (valid until the next call), 0 at
 * the end, or CLI_FAIL-worthy -1 after reporting a malformed line or a read
 * error. */
int cli_keys_next(cli_keys *ks, tern_slice *key);
void cli_keys_close(cli_keys *ks);

/* open.c */
/* Opens an existing index (never creates one).  Reports failures; returns
 * the tern status. */
int cli_open(tern_index **out, const char *dir, unsigned flags);
/* Opens the index in dir, creating it with co's options when absent.  When
 * it exists and an option the user gave differs from the index's, says so
 * and fails with TERN_EINVAL.  Reports failures; returns the tern status. */
int cli_open_create(tern_index **out, const char *dir, const cli_create_opts *co);
/* Closes idx; returns rc, or CLI_FAIL (reported) when closing fails. */
int cli_close(tern_index *idx, const char *dir, int rc);
/* What a read-only command does with a snapshot of dir: returns a tern
 * status, having reported its own failure (cli_fail before the handle it
 * failed on is closed, since a close clears tern_errmsg()). */
typedef int (*cli_snapshot_fn)(tern_snapshot *snap, const char *dir, void *ctx);
/* Opens dir read-only and a snapshot of it, runs fn, closes both; returns
 * CLI_OK or CLI_FAIL (every failure reported). */
int cli_on_snapshot(const char *dir, cli_snapshot_fn fn, void *ctx);
/* Whether DIR holds nothing yet (absent, or empty): an index created there
 * by a command that then fails is removed again (cli_remove_new_index). */
int cli_dir_is_new(const char *dir, int *absent);
void cli_remove_new_index(const char *dir, int absent);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * opts.h — the one option parser of tern-bench.  Each subcommand describes
 * its options as a table (name, kind, where the value goes, default, help);
 * bench_opts_parse() fills the subcommand's options struct from the
 * defaults and then argv, and `tern-bench CMD --help` is printed from the
 * same table by bench_opts_usage(), so the two never disagree.
 *
 *   --name VALUE and --name=VALUE are accepted; --help and -h print the
 *   usage to stdout.  A bad value, an unknown option or a stray argument is
 *   reported on stderr as "tern-bench CMD: ..." and makes the subcommand
 *   exit with status 2.
 */
#ifndef TERN_BENCH_OPTS_H
#define TERN_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum bench_opt_kind {
  BENCH_OPT_U64,         /* uint64_t, k/M/G suffixes (powers of 1000), in [min, max] */
  BENCH_OPT_DOUBLE,      /* double in [min, max] */
  BENCH_OPT_STR,         /* const char *, pointing into argv (or the default) */
  BENCH_OPT_FLAG,        /* int set to `set`; no value */
  BENCH_OPT_U64_LIST,    /* "a,b,c": uint64_t * (malloc'd) + size_t count at count_off */
  BENCH_OPT_DOUBLE_LIST, /* the same of doubles */
  BENCH_OPT_CHOICE,      /* int: 1 + the position of the value in `choices` ("a|b|c") */
  BENCH_OPT_SET,         /* int: "a,c" sets bit i for the i-th word of `choices` ("a|b|c") */
  BENCH_OPT_U64_SET,     /* bench_opt_u64: a uint64_t in [min, max] and whether it was given */
  BENCH_OPT_CUSTOM       /* parse(text, field): 0 or -1 */
} bench_opt_kind;

/* The field of a BENCH_OPT_U64_SET option: "the library's default" unless
 * given. */
typedef struct bench_opt_u64 {
  uint64_t v;
  int set;
} bench_opt_u64;

typedef struct bench_opt {
  const char *name; /* without the leading "--" */
  bench_opt_kind kind;
  size_t off;          /* offsetof() the field in the options struct */
  const char *arg;     /* the value's name in the usage ("N", "LIST"); unused by flags */
  const char *def;     /* the default as it would be typed, applied before argv; NULL: none
                          (a flag with a default is on unless another flag clears it) */
  const char *help;    /* may hold '\n'; the default is appended as " (def)" */
  double min, max;     /* numbers and list elements; max 0: no upper bound */
  int set;             /* BENCH_OPT_FLAG: the value stored */
  const char *choices; /* BENCH_OPT_CHOICE */
  int (*parse)(const char *text, void *field); /* BENCH_OPT_CUSTOM */
  size_t count_off;                            /* lists: offsetof() the size_t count */
} bench_opt;

typedef struct bench_cmd {
  const char *name;     /* "pk" */
  const char *synopsis; /* after the name: "[options]", "--from DIR [options]" */
  const char *summary;  /* one line: what it measures */
  const bench_opt *opts;
  size_t nopts;
  size_t struct_size; /* sizeof the options struct: zeroed before the defaults */
  /* Checks between options after parsing: NULL, or what is wrong. */
  const char *(*check)(void *opts);
  const char *positional; /* "DIR": one operand into the const char * at pos_off */
  size_t pos_off;
} bench_cmd;

#define BENCH_NOPTS(t) (sizeof(t) / sizeof((t)[0]))

/* Table rows, one macro a kind (designated initializers: no field is left
 * to position).  `off` is offsetof(struct, field); lo/hi bound numbers. */
#define BENCH_U64(n, o, a, d, lo, hi, h)                                                           \
  {                                                                                                \
    .name = n, .kind = BENCH_OPT_U64, .off = o, .arg = a, .def = d, .help = h, .min = lo,          \
    .max = hi                                                                                      \
  }
#define BENCH_DBL(n, o, a, d, lo, hi, h)                                                           \
  {                                                                                                \
    .name = n, .kind = BENCH_OPT_DOUBLE, .off = o, .arg = a, .def = d, .help = h, .min = lo,       \
    .max = hi                                                                                      \
  }
#define BENCH_STR(n, o, a, d, h)                                                                   \
  { .name = n, .kind = BENCH_OPT_STR, .off = o, .arg = a, .def = d, .help = h }
/* on: the flag's value is the default (shown as "(default)"). */
#define BENCH_FLAG(n, o, v, on, h)                                                                 \
  { .name = n, .kind = BENCH_OPT_FLAG, .off = o, .set = v, .def = (on) ? "" : NULL, .help = h }
#define BENCH_U64S(n, o, c, a, d, lo, hi, h)                                                       \
  {                                                                                                \
    .name = n, .kind = BENCH_OPT_U64_LIST, .off = o, .count_off = c, .arg = a, .def = d,           \
    .help = h, .min = lo, .max = hi                                                                \
  }
#define BENCH_DBLS(n, o, c, a, d, lo, hi, h)                                                       \
  {                                                                                                \
    .name = n, .kind = BENCH_OPT_DOUBLE_LIST, .off = o, .count_off = c, .arg = a, .def = d,        \
    .help = h, .min = lo, .max = hi                                                                \
  }
#define BENCH_CHOICE(n, o, a, words, d, h)                                                         \
  { .name = n, .kind = BENCH_OPT_CHOICE, .off = o, .arg = a, .choices = words, .def = d, .help = h }
#define BENCH_SET(n, o, a, words, d, h)                                                            \
  { .name = n, .kind = BENCH_OPT_SET, .off = o, .arg = a, .choices = words, .def = d, .help = h }
#define BENCH_U64_SET(n, o, a, lo, hi, h)                                                          \
  { .name = n, .kind = BENCH_OPT_U64_SET, .off = o, .arg = a, .help = h, .min = lo, .max = hi }
#define BENCH_CUSTOM(n, o, fn, a, d, h)                                                            \
  { .name = n, .kind = BENCH_OPT_CUSTOM, .off = o, .parse = fn, .arg = a, .def = d, .help = h }

/* The common --dir: where a subcommand makes its scratch directory. */
#define BENCH_SCRATCH_DIR(o)                                                                       \
  BENCH_STR("dir", o, "PATH", "/var/tmp", "parent of the scratch directory")

/* The bench_cmd of a subcommand whose options fill a `type` from `table`,
 * checked by chk (or NULL) after parsing. */
#define BENCH_CMD(n, syn, sum, table, type, chk)                                                   \
  {                                                                                                \
    .name = n, .synopsis = syn, .summary = sum, .opts = table, .nopts = BENCH_NOPTS(table),        \
    .struct_size = sizeof(type), .check = chk                                                      \
  }

/* 0: parsed; 1: --help was printed (exit 0); -1: an error was printed
 * (exit 2).  The conventional exit status is bench_opts_exit(rc). */
int bench_opts_parse(const bench_cmd *cmd, void *opts, int argc, char **argv);
static inline int bench_opts_exit(int rc) { return rc > 0 ? 0 : 2; }
void bench_opts_usage(const bench_cmd *cmd, FILE *out);
/* Frees what parsing allocated (the lists), after a parse that failed too. */
void bench_opts_free(const bench_cmd *cmd, void *opts);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * test_bench_opts.c — tern-bench's shared option parser (tools/bench/opts.c)
 * and timing harness (tools/bench/harness.c): defaults, every option kind,
 * both spellings of a value, bounds, refusals, the usage printed from the
 * table; the harness's rotation of contenders against a reference order,
 * and its medians and per-round ratios against values computed here on
 * random inputs (tu_seed, printed).
 */
#include "tests/common/testutil.h"

#include "tools/bench/bench_common.c"
#include "tools/bench/harness.c"
#include "tools/bench/opts.c"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct t_opts {
  uint64_t n, *list;
  size_t nlist;
  double x;
  const char *dir, *file;
  int flag, mode, set;
  bench_opt_u64 opt;
  int custom;
} t_opts;

static int parse_custom(const char *text, void *field) {
  if (strcmp(text, "yes") != 0) return -1;
  *(int *)field = 42;
  return 0;
}

static const char *t_check(void *opts) {
  const t_opts *o = opts;
  return o->n == 13 ? "--n must not be 13" : NULL;
}

#define T_OPT(f) offsetof(t_opts, f)
static const bench_opt k_t_opts[] = {
    BENCH_U64("n", T_OPT(n), "N", "10k", 1, 1000000, "a count"),
    BENCH_U64S("list", T_OPT(list), T_OPT(nlist), "LIST", "1,2,3", 1, 100, "a list"),
    BENCH_DBL("x", T_OPT(x), "X", "1.5", 0, 10, "a number\nover two lines"),
    BENCH_SCRATCH_DIR(T_OPT(dir)),
    BENCH_FLAG("flag", T_OPT(flag), 1, 1, "on by default"),
    BENCH_FLAG("no-flag", T_OPT(flag), 0, 0, "turns it off"),
    BENCH_CHOICE("mode", T_OPT(mode), "M", "a|bb|c", "bb", "a | bb | c"),
    BENCH_SET("set", T_OPT(set), "LIST", "p|q|r", "p", "of p,q,r"),
    BENCH_U64_SET("opt", T_OPT(opt), "B", 0, 64, "optional"),
    BENCH_CUSTOM("custom", T_OPT(custom), parse_custom, "WORD", NULL, "yes only"),
};
static const bench_cmd k_t_cmd =
    BENCH_CMD("t", "[options]", "a test command", k_t_opts, t_opts, t_check);

/* Parses argv (NULL-terminated, without the command's name) into *o. */
static int parse(t_opts *o, const char *const *args) {
  char *argv[32] = {"t"};
  int argc = 1;
  for (; args[argc - 1]; argc++)
    argv[argc] = (char *)args[argc - 1];
  return bench_opts_parse(&k_t_cmd, o, argc, argv);
}

static void test_defaults(void **state) {
  (void)state;
  t_opts o;
  const char *none[] = {NULL};
  assert_int_equal(parse(&o, none), 0);
  assert_int_equal(o.n, 10000);
  assert_int_equal(o.nlist, 3);
  assert_int_equal(o.list[2], 3);
  assert_true(o.x == 1.5);
  assert_string_equal(o.dir, "/var/tmp");
  assert_int_equal(o.flag, 1);
  assert_int_equal(o.mode, 2);
  assert_int_equal(o.set, 1);
  assert_int_equal(o.opt.set, 0);
  assert_int_equal(o.custom, 0);
  assert_null(o.file);
  free(o.list);
}

static void test_every_kind(void **state) {
  (void)state;
  t_opts o;
  const char *ok[] = {"--n",      "0x10",      "--list=7,8", "--x", "0.25",
                      "--dir=/d", "--no-flag", "--mode",     "c",   "--set",
                      "r,p",      "--opt=0",   "--custom",   "yes", NULL};
  assert_int_equal(parse(&o, ok), 0);
  assert_int_equal(o.n, 16);
  assert_int_equal(o.nlist, 2);
  assert_int_equal(o.list[0], 7);
  assert_int_equal(o.list[1], 8);
  assert_true(o.x == 0.25);
  assert_string_equal(o.dir, "/d");
  assert_int_equal(o.flag, 0);
  assert_int_equal(o.mode, 3);
  assert_int_equal(o.set, 5);
  assert_int_equal(o.opt.set, 1);
  assert_int_equal(o.opt.v, 0);
  assert_int_equal(o.custom, 42);
  free(o.list);
}

static void test_refusals(void **state) {
  (void)state;
  const char *bad[][4] = {
      {"--n", "0", NULL},        /* below min */
      {"--n", "1000001", NULL},  /* above max */
      {"--n", "many", NULL},     /* not a number */
      {"--list", "1,200", NULL}, /* an element above max */
      {"--list", "1,,2", NULL},  /* an empty element */
      {"--x", "11", NULL},       /* double above max */
      {"--mode", "d", NULL},     /* not a choice */
      {"--set", "p,s", NULL},    /* a word not in the set */
      {"--opt", "65", NULL},     /* optional number above max */
      {"--custom", "no", NULL},  /* the custom parser refuses */
      {"--nope", NULL},          /* unknown option */
      {"stray", NULL},           /* no operand expected */
      {"--flag=1", NULL},        /* a flag takes no value */
      {"--n", NULL},             /* missing value */
      {"--n", "13", NULL},       /* the check refuses */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(&o, bad[i]);
    if (rc != -1) fail_msg("accepted %s %s", bad[i][0], bad[i][1] ? bad[i][1] : "");
    assert_int_equal(bench_opts_exit(rc), 2);
    free(o.list);
  }
}

static void test_help_and_usage(void **state) {
  (void)state;
  char *dir = tu_tmpdir("bench-opts");
  char *path = tu_path(dir, "usage.txt");
  FILE *f = fopen(path, "w+");
  assert_non_null(f);
  bench_opts_usage(&k_t_cmd, f);
  rewind(f);
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  const char *expect[] = {
      "tern-bench t [options]   a test command\n",
      "  --n N                 a count (10k)\n",
      "  --list LIST           a list (1,2,3)\n",
      ("  --x X                 a number\n                        over two lines (1.5)\n"),
      "  --dir PATH            parent of the scratch directory (/var/tmp)\n",
      "  --flag                on by default (default)\n",
      "  --no-flag             turns it off\n",
      "  --custom WORD         yes only\n"};
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
    if (!strstr(text, expect[i])) fail_msg("usage lacks \"%s\" in:\n%s", expect[i], text);
  /* --help and -h print it and stop the subcommand with status 0. */
  t_opts o;
  const char *help[] = {"--n", "5", "-h", NULL};
  int rc = parse(&o, help);
  assert_int_equal(rc, 1);
  assert_int_equal(bench_opts_exit(rc), 0);
  free(o.list);
  tu_rmtree(dir);
  free(path);
  free(dir);
}

/* ------------------------------------------------------------ harness */

typedef struct t_run {
  size_t calls;
  size_t who[64], m[64], round[64];
  double value[4][3][8]; /* what fn returns */
} t_run;

static double t_time(void *ctx, size_t who, size_t m, size_t round) {
  t_run *x = ctx;
  x->who[x->calls] = who;
  x->m[x->calls] = m;
  x->round[x->calls] = round;
  x->calls++;
  return x->value[who][m][round];
}

static double median_ref(const double *v, size_t n) {
  double s[16];
  memcpy(s, v, n * sizeof *s);
  for (size_t i = 1; i < n; i++) /* insertion sort: independent of bench_summarize */
    for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
      double t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void test_rounds(void **state) {
  (void)state;
  tu_rng rng;
  tu_rng_init(&rng, 0x6f707473); /* tu_seed() ^ this; the seed is printed */
  t_run *x = calloc(1, sizeof *x);
  assert_non_null(x);
  bench_rounds r = {.contenders = 3, .measures = 2, .rounds = 5};
  for (size_t w = 0; w < 3; w++)
    for (size_t m = 0; m < 2; m++)
      for (size_t i = 0; i < 5; i++)
        x->value[w][m][i] = (double)(1 + tu_below(&rng, 1000));
  assert_int_equal(bench_rounds_run(&r, t_time, NULL, x), 0);
  assert_int_equal(x->calls, 30);
  /* Round -> measure -> contenders starting at the round's number. */
  size_t c = 0;
  for (size_t i = 0; i < 5; i++)
    for (size_t m = 0; m < 2; m++)
      for (size_t j = 0; j < 3; j++, c++) {
        assert_int_equal(x->round[c], i);
        assert_int_equal(x->m[c], m);
        assert_int_equal(x->who[c], (i + j) % 3);
      }
  for (size_t w = 0; w < 3; w++)
    for (size_t m = 0; m < 2; m++) {
      assert_true(bench_rounds_median(&r, w, m) == median_ref(x->value[w][m], 5));
      double q[5];
      for (size_t i = 0; i < 5; i++)
        q[i] = x->value[w][m][i] / x->value[(w + 1) % 3][m][i];
      assert_true(bench_rounds_ratio(&r, m, w, (w + 1) % 3) == median_ref(q, 5));
    }
  bench_rounds_free(&r);
  /* A failed timing stops the rounds. */
  x->calls = 0;
  x->value[1][0][0] = -1;
  r = (bench_rounds){.contenders = 3, .measures = 2, .rounds = 5};
  assert_int_equal(bench_rounds_run(&r, t_time, NULL, x), -1);
  assert_int_equal(x->calls, 2);
  bench_rounds_free(&r);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults), cmocka_unit_test(test_every_kind),
      cmocka_unit_test(test_refusals), cmocka_unit_test(test_help_and_usage),
      cmocka_unit_test(test_rounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

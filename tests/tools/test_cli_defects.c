/* SPDX-License-Identifier: MIT */
/*
 * test_cli_defects.c — `tern` where it once misreported (issue 20): each
 * case runs the built binary through the shell in a scratch directory and
 * checks the exit status and what standard error names.
 *  - backup of a freshly created, empty index;
 *  - on segment damage, search, scan, terms and backup name the file, as
 *    get and verify do;
 *  - verify exits 3 (unsound), not 2, when a segment file is missing;
 *  - backup into a non-empty destination, under a missing parent, and
 *    inside the index directory: refused, naming the destination;
 *  - scan --prefix '' is every key; terms FIELD is unescaped as search's;
 *  - --threshold ' 5' is refused; tern --help CMD prints CMD's help.
 */
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *g_bin;
static char *g_dir; /* scratch */

typedef struct run_out {
  int code;
  char *out, *err;
} run_out;

/* Runs `tern ARGS` (shell-quoted by the caller) in g_dir. */
static run_out run(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out 2>err", g_dir, g_bin, args);
  int st = system(cmd);
  run_out r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  char *o = tu_path(g_dir, "out"), *e = tu_path(g_dir, "err");
  size_t n;
  r.out = (char *)tu_read_file(o, &n);
  r.out[n] = '\0';
  r.err = (char *)tu_read_file(e, &n);
  r.err[n] = '\0';
  free(o);
  free(e);
  return r;
}

static void sh(const char *script) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s", g_dir, script);
  assert_int_equal(system(cmd), 0);
}

/* Exit `code`, and stderr holding `in_err` (NULL: anything). */
static void expect(const char *args, int code, const char *in_err) {
  run_out r = run(args);
  if (r.code != code || (in_err && !strstr(r.err, in_err)))
    fail_msg("tern %s: exit %d (want %d)\nstderr: %s\nwant in it: %s", args, r.code, code, r.err,
             in_err ? in_err : "");
  free(r.out);
  free(r.err);
}

/* An index of 200 documents in one segment, in g_dir/ix. */
static void make_index(void) {
  sh("rm -rf ix d* e* x* && i=0; while [ $i -lt 200 ]; do "
     "printf 'k%03d\\tv%d\\tf:a%d\\tg:x\\n' $i $i $((i % 7)); i=$((i+1)); done > in.tsv");
  expect("import -q ix in.tsv", 0, NULL);
}

static void test_backup_of_empty_index(void **state) {
  (void)state;
  sh("rm -rf e e.bak");
  expect("create e", 0, NULL);
  expect("backup e e.bak", 0, NULL);
  expect("verify e.bak", 0, NULL);
}

/* Damage in the middle of the terms file: every reader names it. */
static void test_damage_names_the_file(void **state) {
  (void)state;
  make_index();
  sh("cp -r ix d && f=$(ls d/*.tim) && head -c 8000 /dev/zero | tr '\\0' 'Z' | "
     "dd of=$f bs=1 seek=200 conv=notrunc 2>/dev/null");
  const char *cmds[] = {"get d k100", "scan d", "search d f:a1", "terms d f", "backup d d.bak"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
    expect(cmds[i], 2, ".tim");
  expect("verify d", 3, ".tim");
}

static void test_verify_missing_file_is_unsound(void **state) {
  (void)state;
  make_index();
  sh("cp -r ix d && rm d/*.val");
  expect("verify d", 3, ".val");
}

static void test_backup_destinations(void **state) {
  (void)state;
  make_index();
  sh("mkdir -p x && touch x/f");
  expect("backup ix x", 2, "x: invalid argument: exists and is not empty");
  expect("backup ix nope/b", 2, "tern: nope/b:");
  expect("backup ix ix/inside", 2, "inside the index directory");
  expect("backup ix ix", 2, "not empty");
  expect("backup ix ./ix/../ix/in", 2, "inside the index directory");
  expect("backup ix xb", 0, NULL);
  expect("verify xb", 0, NULL);
}

static void test_operands(void **state) {
  (void)state;
  make_index();
  run_out r = run("scan ix --prefix '' --count");
  assert_int_equal(r.code, 0);
  assert_string_equal(r.out, "200\n");
  free(r.out);
  free(r.err);
  run_out a = run("terms ix f"), b = run("terms ix '\\x66'");
  assert_int_equal(a.code, 0);
  assert_int_equal(b.code, 0);
  assert_string_equal(a.out, b.out);
  assert_true(strlen(a.out) > 0);
  free(a.out), free(a.err), free(b.out), free(b.err);
  expect("terms ix 'f\\q'", 2, "field");
  expect("terms ix --prefix '' f --limit 1", 0, NULL);
  expect("create --threshold ' 5' t5", 2, "--threshold");
  expect("create --threshold '+5' t5", 2, "--threshold");
  expect("scan ix --limit ' 5'", 2, "--limit");
  r = run("--help scan");
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "usage: tern scan"));
  free(r.out);
  free(r.err);
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin) {
    fprintf(stderr, "TERN_BIN not set (run through ctest)\n");
    return 1;
  }
  g_dir = tu_tmpdir("cli-defects");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backup_of_empty_index),
      cmocka_unit_test(test_damage_names_the_file),
      cmocka_unit_test(test_verify_missing_file_is_unsound),
      cmocka_unit_test(test_backup_destinations),
      cmocka_unit_test(test_operands),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_rmtree(g_dir);
  free(g_dir);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * test_cli_errfiles.c — every `tern` command that reads an index names the
 * file when one of its files is damaged or missing: for each segment file
 * (.tim .tix .doc .flt .val, in an index whose values and postings all
 * live out of line: --inline-max 0 --threshold 0) damaged (a byte flipped
 * in every page) or removed, each command either succeeds (it did not
 * read that file) or exits 2 (verify: 3) with the file's name on standard
 * error; each must have failed at least once.  And the inputs of build,
 * import and ingest: a missing TSV, a damaged or missing built segment
 * file, named.
 */
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *g_bin;
static char *g_dir; /* scratch */

static void sh(const char *script) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s", g_dir, script);
  assert_int_equal(system(cmd), 0);
}

/* Runs `tern ARGS` in g_dir; returns the exit code, stderr in *err. */
static int run(const char *args, char **err) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out 2>err </dev/null", g_dir, g_bin, args);
  int st = system(cmd);
  char *e = tu_path(g_dir, "err");
  size_t n;
  *err = (char *)tu_read_file(e, &n);
  (*err)[n] = '\0';
  free(e);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static unsigned g_bad;

/* A failure must name `file` with the exit code `code`; returns whether it failed. */
static int check(const char *args, const char *file, const char *what, int code) {
  char *err;
  int rc = run(args, &err);
  int failed = rc != 0;
  if (failed && (rc != code || !strstr(err, file))) {
    fprintf(stderr, "tern %s (%s %s): exit %d (want %d): %s", args, file, what, rc, code, err);
    g_bad++;
  }
  free(err);
  return failed;
}

/* Two segments (even keys, then odd keys) and a buffered document. */
static void make_index(void) {
  sh("rm -rf ix && for p in 0 1; do i=$p; while [ $i -lt 300 ]; do "
     "printf 'k%03d\\tvalue-%d\\tf:a%d\\tg:x%d\\n' $i $i $((i % 7)) $i; i=$((i+2)); done > in$p.tsv; done && "
     "printf 'k%03d\\n' $(seq 0 299) > keys");
  char *err;
  assert_int_equal(run("import -q --inline-max 0 --threshold 0 ix in0.tsv", &err), 0);
  free(err);
  assert_int_equal(run("import -q ix in1.tsv", &err), 0);
  free(err);
  assert_int_equal(run("put ix zz buffered", &err), 0);
  free(err);
}

/* Flips a byte in every 4 KiB page of FILE. */
static const char *const damage_script =
    "f=%s; s=$(stat -c %%s $f); o=1000; while [ $o -lt $s ]; do "
    "printf 'Z' | dd of=$f bs=1 seek=$o conv=notrunc 2>/dev/null; o=$((o+4096)); done; "
    "[ $s -le 1000 ] && printf 'Z' | dd of=$f bs=1 seek=$((s/2)) conv=notrunc 2>/dev/null; true";

static void test_index_files_named(void **state) {
  (void)state;
  g_bad = 0;
  make_index();
  static const struct {
    const char *args;
    int code;
  } cmds[] = {
      {"get d -  <keys", 2},     {"scan d", 2},
      {"search d f:a1", 2},      {"terms d f", 2},
      {"terms d g", 2},          {"dump d", 2},
      {"export d exo", 2},       {"backup d d.bak", 2},
      {"verify d", 3},           {"compact d", 2},
      {"delete d k100 k101", 2}, {"delete-range d --from k010 --to k150", 2},
      {"import -q d in0.tsv", 2}, {"put d k102 new", 2},
  };
  enum { NCMDS = sizeof cmds / sizeof cmds[0] };
  unsigned fails[NCMDS] = {0};
  static const char *const exts[] = {".tim", ".tix", ".doc", ".flt", ".val"};
  for (size_t e = 0; e < 5; e++)
    for (int missing = 0; missing < 2; missing++)
      for (size_t c = 0; c < NCMDS; c++) {
        char file[32], script[1024], args[256];
        snprintf(file, sizeof file, "s000000000001%s", exts[e]);
        if (missing) {
          snprintf(script, sizeof script, "rm -rf d d.bak exo && cp -a ix d && rm d/%s", file);
        } else {
          char path[64], dmg[700];
          snprintf(path, sizeof path, "d/%s", file);
          snprintf(dmg, sizeof dmg, damage_script, path);
          snprintf(script, sizeof script, "rm -rf d d.bak exo && cp -a ix d && %s", dmg);
        }
        sh(script);
        /* `get d - <keys`: the redirection is the command's own */
        snprintf(args, sizeof args, "%s", cmds[c].args);
        char *lt = strstr(args, " <keys");
        if (lt) {
          *lt = '\0';
          char full[300];
          snprintf(full, sizeof full, "%s <keys", args);
          char cmd[4096];
          snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out 2>err", g_dir, g_bin, full);
          int st = system(cmd);
          int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
          char *ep = tu_path(g_dir, "err");
          size_t n;
          char *err = (char *)tu_read_file(ep, &n);
          err[n] = '\0';
          if (rc != 0 && rc != 1) {
            fails[c]++;
            if (rc != 2 || !strstr(err, file)) {
              fprintf(stderr, "tern %s (%s %s): exit %d: %s", full, file,
                      missing ? "missing" : "damaged", rc, err);
              g_bad++;
            }
          }
          free(err);
          free(ep);
          continue;
        }
        fails[c] += (unsigned)check(args, file, missing ? "missing" : "damaged", cmds[c].code);
      }
  for (size_t c = 0; c < NCMDS; c++) {
    print_message("tern %-40s failed in %u of 10\n", cmds[c].args, fails[c]);
    if (!fails[c]) {
      fprintf(stderr, "tern %s never failed: the test did not reach it\n", cmds[c].args);
      g_bad++;
    }
  }
  assert_int_equal(g_bad, 0);
}

/* The inputs of build, import and ingest. */
static void test_inputs_named(void **state) {
  (void)state;
  g_bad = 0;
  make_index();
  assert_int_equal(check("build -q bo missing.tsv", "missing.tsv", "missing", 2), 1);
  assert_int_equal(check("import -q ix2 missing.tsv", "missing.tsv", "missing", 2), 1);
  char *err;
  sh("rm -rf bs && printf 'n%03d\\tv\\tf:a\\n' $(seq 0 99) > b.tsv");
  assert_int_equal(run("build -q bs b.tsv", &err), 0);
  free(err);
  static const char *const exts[] = {".tim", ".tix", ".doc", ".flt", ".val"};
  for (size_t e = 0; e < 5; e++)
    for (int missing = 0; missing < 2; missing++) {
      char file[32], script[1024];
      snprintf(file, sizeof file, "s000000000001%s", exts[e]);
      if (missing)
        snprintf(script, sizeof script, "rm -rf d s && cp -a ix d && cp -a bs s && rm s/%s", file);
      else
        snprintf(script, sizeof script,
                 "rm -rf d s && cp -a ix d && cp -a bs s && printf 'ZZZZ' | dd of=s/%s bs=1 "
                 "seek=$(( $(stat -c %%s s/%s) / 2 )) conv=notrunc 2>/dev/null",
                 file, file);
      sh(script);
      assert_int_equal(check("ingest d s", file, missing ? "missing" : "damaged", 2), 1);
    }
  assert_int_equal(g_bad, 0);
}

static int setup(void **state) {
  (void)state;
  g_bin = getenv("TERN_BIN");
  assert_non_null(g_bin);
  g_dir = tu_tmpdir("cli-errfiles");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_rmtree(g_dir);
  free(g_dir);
  return 0;
}

int main(void) {
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_index_files_named),
      cmocka_unit_test(test_inputs_named),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: MIT */
/*
 * test_cli_scan.c — `tern scan`, `tern terms`, `tern backup` and the key
 * order of `tern search`, end to end: every option and exit code, against
 * a reference computed from the imported documents (random keys with
 * binary bytes, printed seed).
 */
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_bin;
static char *g_dir; /* scratch */

typedef struct run_out {
  int code;
  char *out;
} run_out;

/* Runs `tern ARGS` through the shell (ARGS already quoted); stderr goes
 * to g_dir/err. */
static run_out run(const char *args) {
  char *outp = tu_path(g_dir, "out");
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >'%s' 2>err", g_dir, g_bin, args, outp);
  int st = system(cmd);
  run_out r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128, NULL};
  size_t n;
  r.out = (char *)tu_read_file(outp, &n);
  r.out[n] = 0;
  free(outp);
  return r;
}

static void expect(const char *args, int code, const char *out) {
  run_out r = run(args);
  if (r.code != code || (out && strcmp(r.out, out)))
    fail_msg("tern %s: exit %d (want %d)\n--- got:\n%s--- want:\n%s", args, r.code, code, r.out,
             out ? out : "(any)");
  free(r.out);
}

/* The documents: key "k" + 2 random letters or digits, value "v<i>",
 * term c:<i % 3>; some deleted and some replaced after the import. */
#define NDOCS 60
typedef struct doc {
  char key[8];
  char val[16];
  int live, cls;
} doc;
static doc g_docs[NDOCS];

static int doc_cmp(const void *a, const void *b) {
  return strcmp(((const doc *)a)->key, ((const doc *)b)->key);
}

static void setup_index(void) {
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x5ca11u);
  char *tsv = malloc(NDOCS * 64);
  size_t len = 0;
  for (int i = 0; i < NDOCS; i++) {
    doc *d;
    for (;;) { /* unique keys */
      d = &g_docs[i];
      static const char al[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
      snprintf(d->key, sizeof d->key, "k%c%c", al[tu_below(&r, 8)], al[tu_below(&r, 62)]);
      int dup = 0;
      for (int j = 0; j < i; j++)
        dup |= !strcmp(g_docs[j].key, d->key);
      if (!dup) break;
    }
    snprintf(d->val, sizeof d->val, "v%d", i);
    d->live = 1;
    d->cls = i % 3;
    len += (size_t)sprintf(tsv + len, "%s\t%s\tc:%d\n", d->key, d->val, d->cls);
  }
  char *p = tu_path(g_dir, "docs.tsv");
  tu_write_file(p, tsv, len);
  free(p);
  free(tsv);
  expect("import -q idx docs.tsv", 0, NULL);
  char args[256];
  for (int i = 0; i < NDOCS; i += 7) { /* deletions land in the segment's live docs */
    snprintf(args, sizeof args, "delete idx '%.7s'", g_docs[i].key);
    expect(args, 0, NULL);
    g_docs[i].live = 0;
  }
  for (int i = 3; i < NDOCS; i += 11) { /* replacements sit in the write buffer */
    if (!g_docs[i].live) continue;
    snprintf(g_docs[i].val, sizeof g_docs[i].val, "w%d", i);
    snprintf(args, sizeof args, "put idx '%.7s' %.15s c:%d", g_docs[i].key, g_docs[i].val,
             g_docs[i].cls);
    expect(args, 0, NULL);
  }
  qsort(g_docs, NDOCS, sizeof *g_docs, doc_cmp);
}

/* The expected scan output of live docs with from <= key < to (NULL: open)
 * and the prefix, reversed or not, limited; keys only or with values. */
static char *expected(const char *from, const char *to, const char *pre, int rev, int limit,
                      int keys_only, int count) {
  static char buf[NDOCS * 64];
  size_t len = 0;
  int n = 0;
  for (int k = 0; k < NDOCS; k++) {
    const doc *d = &g_docs[rev ? NDOCS - 1 - k : k];
    if (!d->live || (from && strcmp(d->key, from) < 0) || (to && strcmp(d->key, to) >= 0) ||
        (pre && strncmp(d->key, pre, strlen(pre))))
      continue;
    if (limit >= 0 && n >= limit) break;
    n++;
    if (!count)
      len += (size_t)snprintf(buf + len, sizeof buf - len, keys_only ? "%s\n" : "%s\t%s\n", d->key,
                              d->val);
  }
  if (count) sprintf(buf, "%d\n", n);
  else buf[len] = 0;
  return buf;
}

static void test_scan_options(void **state) {
  (void)state;
  expect("scan idx", 0, expected(NULL, NULL, NULL, 0, -1, 0, 0));
  expect("scan idx --reverse", 0, expected(NULL, NULL, NULL, 1, -1, 0, 0));
  expect("scan idx --keys-only --limit 5", 0, expected(NULL, NULL, NULL, 0, 5, 1, 0));
  expect("scan idx --count", 0, expected(NULL, NULL, NULL, 0, -1, 0, 1));
  expect("scan idx --limit 0", 0, "");
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x5ca12u);
  for (int i = 0; i < 12; i++) {
    const char *a = g_docs[tu_below(&r, NDOCS)].key, *b = g_docs[tu_below(&r, NDOCS)].key;
    char args[256];
    int rev = (int)tu_below(&r, 2), lim = (int)tu_below(&r, 4) ? -1 : (int)tu_below(&r, 6);
    char limit[32] = "";
    if (lim >= 0) snprintf(limit, sizeof limit, " --limit %d", lim);
    snprintf(args, sizeof args, "scan idx --from '%.7s' --to '%.7s'%s%s", a, b,
             rev ? " --reverse" : "", limit);
    expect(args, 0, expected(a, b, NULL, rev, lim, 0, 0));
    snprintf(args, sizeof args, "scan idx --from '%.7s' --keys-only%s", a, rev ? " --reverse" : "");
    expect(args, 0, expected(a, NULL, NULL, rev, -1, 1, 0));
    snprintf(args, sizeof args, "scan idx --to '%.7s' --count", b);
    expect(args, 0, expected(NULL, b, NULL, 0, -1, 0, 1));
    char pre[3] = {a[0], a[1], 0}; /* "k" and the first letter */
    snprintf(args, sizeof args, "scan idx --prefix '%s'%s", pre, rev ? " --reverse" : "");
    expect(args, 0, expected(NULL, NULL, pre, rev, -1, 0, 0));
  }
  expect("scan idx --prefix zz", 0, "");
  expect("scan idx --prefix zz --count", 0, "0\n");
}

static void test_scan_errors(void **state) {
  (void)state;
  expect("scan", 2, "");
  expect("scan idx extra", 2, "");
  expect("scan idx --prefix k --from k", 2, "");
  expect("scan idx --limit x", 2, "");
  expect("scan idx --limit -1", 2, "");
  expect("scan idx --bogus", 2, "");
  expect("scan idx --from '\\xZZ'", 2, "");
  expect("scan nowhere", 2, "");
  expect("scan --help", 0, NULL);
}

static void test_terms(void **state) {
  (void)state;
  int df[3] = {0, 0, 0};
  for (int i = 0; i < NDOCS; i++)
    df[g_docs[i].cls] += g_docs[i].live;
  char want[64];
  snprintf(want, sizeof want, "0\t%d\n1\t%d\n2\t%d\n", df[0], df[1], df[2]);
  expect("terms idx c", 0, want);
  snprintf(want, sizeof want, "1\t%d\n", df[1]);
  expect("terms idx c --prefix 1", 0, want);
  snprintf(want, sizeof want, "0\t%d\n1\t%d\n", df[0], df[1]);
  expect("terms idx c --limit 2", 0, want);
  expect("terms idx nofield", 0, "");
  expect("terms idx", 2, "");
  expect("terms idx c extra", 2, "");
  expect("terms idx c --limit z", 2, "");
  expect("terms nowhere c", 2, "");
  expect("terms --help", 0, NULL);
}

static void test_search_key_order(void **state) {
  (void)state;
  static char want[NDOCS * 64];
  size_t len = 0;
  for (int i = 0; i < NDOCS; i++)
    if (g_docs[i].live && g_docs[i].cls == 1)
      len += (size_t)snprintf(want + len, sizeof want - len, "%s\n", g_docs[i].key);
  want[len] = 0;
  expect("search idx c:1", 0, want); /* buffer and segment merged in key order */
}

static void test_backup(void **state) {
  (void)state;
  char *all = strdup(expected(NULL, NULL, NULL, 0, -1, 0, 0));
  int live = 0;
  for (int i = 0; i < NDOCS; i++)
    live += g_docs[i].live;
  char want[64];
  snprintf(want, sizeof want, "copy: ok, %d documents\n", live);
  expect("backup idx copy", 0, want);
  expect("verify copy", 0, NULL);
  expect("scan copy", 0, all);
  expect("backup idx copy", 2, ""); /* not empty */
  expect("backup idx", 2, "");
  expect("backup nowhere copy2", 2, "");
  char *empty = tu_path(g_dir, "empty");
  assert_int_equal(mkdir(empty, 0777), 0);
  expect("backup idx empty", 0, NULL);
  expect("scan empty", 0, all);
  expect("backup --help", 0, NULL);
  free(empty);
  free(all);
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin || !*g_bin || access(g_bin, X_OK) != 0) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 77;
  }
  g_dir = tu_tmpdir("cli-scan");
  setup_index();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scan_options), cmocka_unit_test(test_scan_errors),
      cmocka_unit_test(test_terms),        cmocka_unit_test(test_search_key_order),
      cmocka_unit_test(test_backup),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_rmtree(g_dir);
  free(g_dir);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * test_cli.c — the `tern` command end to end: runs the built binary
 * ($TERN_BIN, set by ctest) in scratch directories, feeding standard input
 * from a file and capturing standard output, standard error and the exit
 * status, and checks them against a reference model of the index (sorted
 * arrays of the documents the test imported).
 */
#include "tests/common/cli_run.h"
#include "tests/common/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_bin;

/* ---- running the binary ------------------------------------------------ */

typedef tu_cli_result result;

#define RUN_IN(in, inlen, ...) \
  tu_cli_run_bytes(g_bin, in, inlen, (const char *const[]){__VA_ARGS__, NULL})
#define RUN(...) RUN_IN(NULL, 0, __VA_ARGS__)

static void expect_code(const result *r, int code) {
  if (r->code != code)
    fail_msg("exit %d, want %d\n--- stdout:\n%.2000s\n--- stderr:\n%.2000s", r->code, code, r->out,
             r->err);
}

static void expect_err(const result *r, const char *want) {
  if (strcmp(r->err, want)) fail_msg("stderr:\n%s\nwant:\n%s", r->err, want);
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* An error report: exactly one line, starting with `prefix`. */
static void expect_one_line(const result *r, const char *prefix) {
  if (strncmp(r->err, prefix, strlen(prefix)) || count_lines(r->err) != 1)
    fail_msg("stderr:\n%s\nwant one line starting with: %s", r->err, prefix);
}

/* ---- a reference model of imported documents ---------------------------- */

/* Escaped form, as the tool prints it (independent of tools/tern/escape.c). */
static void esc_append(char **buf, size_t *len, size_t *cap, const uint8_t *s, size_t n) {
  if (*len + 4 * n + 8 > *cap) {
    while (*len + 4 * n + 8 > *cap)
      *cap = *cap ? *cap * 2 : 4096;
    *buf = realloc(*buf, *cap);
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t c = s[i];
    char *d = *buf + *len;
    if (c == '\\')
      *len += (size_t)sprintf(d, "\\\\");
    else if (c == '\t')
      *len += (size_t)sprintf(d, "\\t");
    else if (c == '\n')
      *len += (size_t)sprintf(d, "\\n");
    else if (c == '\r')
      *len += (size_t)sprintf(d, "\\r");
    else if (c < 0x20 || c == 0x7f)
      *len += (size_t)sprintf(d, "\\x%02x", c);
    else
      (*buf)[(*len)++] = (char)c;
  }
  (*buf)[*len] = '\0';
}

static void str_append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    while (*len + n + 1 > *cap)
      *cap = *cap ? *cap * 2 : 4096;
    *buf = realloc(*buf, *cap);
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;
#define SB_ESC(sb, s, n) esc_append(&(sb)->p, &(sb)->len, &(sb)->cap, (const uint8_t *)(s), n)
#define SB_STR(sb, s) str_append(&(sb)->p, &(sb)->len, &(sb)->cap, s)

typedef struct doc {
  uint8_t key[24];
  size_t klen;
  uint8_t val[40];
  size_t vlen;
  int tag, grp; /* terms tag:t<tag> and grp:<grp> */
  size_t line;  /* 0-based line of the import it came from */
} doc;

static int doc_cmp_key_line(const void *a, const void *b) {
  const doc *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->key, y->key, n);
  if (c) return c;
  if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

static void random_key(tu_rng *r, uint8_t *key, size_t *klen) {
  static const uint8_t alphabet[] = {'a', 'b', 'c', '\\', '\t', '\n', '\r', 0, 0xff, ':', ' '};
  *klen = 1 + (size_t)tu_below(r, 12);
  for (size_t i = 0; i < *klen; i++)
    key[i] = tu_below(r, 2) ? alphabet[tu_below(r, sizeof alphabet)] : (uint8_t)tu_next(r);
}

/* `n` import lines, about a tenth repeating an earlier key. */
static doc *random_docs(tu_rng *r, size_t n) {
  doc *d = calloc(n, sizeof *d);
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && tu_below(r, 10) == 0) {
      const doc *old = &d[tu_below(r, i)];
      memcpy(d[i].key, old->key, old->klen);
      d[i].klen = old->klen;
    } else {
      random_key(r, d[i].key, &d[i].klen);
    }
    d[i].vlen = (size_t)tu_below(r, sizeof d[i].val + 1);
    tu_fill(r, d[i].val, d[i].vlen);
    d[i].tag = (int)tu_below(r, 7);
    d[i].grp = (int)tu_below(r, 3);
    d[i].line = i;
  }
  return d;
}

static void doc_line(sbuf *sb, const doc *d, int crlf) {
  SB_ESC(sb, d->key, d->klen);
  SB_STR(sb, "\t");
  SB_ESC(sb, d->val, d->vlen);
  char terms[64];
  snprintf(terms, sizeof terms, "\ttag:t%d\tgrp:%d%s\n", d->tag, d->grp, crlf ? "\r" : "");
  if (crlf) { /* "\r\n", not "\n\r" */
    size_t l = strlen(terms);
    terms[l - 2] = '\r';
    terms[l - 1] = '\n';
  }
  SB_STR(sb, terms);
}

/* The documents that survive an import of d[0..n): the last line of each key,
 * sorted by key.  Returns their number. */
static size_t reference_final(doc *d, size_t n, doc **out) {
  doc *s = malloc(n * sizeof *s);
  memcpy(s, d, n * sizeof *s);
  qsort(s, n, sizeof *s, doc_cmp_key_line);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (i + 1 < n && s[i + 1].klen == s[i].klen && !memcmp(s[i + 1].key, s[i].key, s[i].klen))
      continue; /* a later line has the same key */
    s[m++] = s[i];
  }
  *out = s;
  return m;
}

static const doc *reference_find(const doc *fin, size_t m, const uint8_t *key, size_t klen) {
  doc probe;
  memcpy(probe.key, key, klen);
  probe.klen = klen;
  probe.line = 0;
  size_t lo = 0, hi = m;
  while (lo < hi) { /* lines differ, so compare keys only */
    size_t mid = (lo + hi) / 2;
    doc a = fin[mid];
    a.line = 0;
    int c = doc_cmp_key_line(&a, &probe);
    if (c == 0) return &fin[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* "<parent of dir>/name": the index directory may not exist yet. */
static char *sibling(const char *dir, const char *name) {
  char *parent = strdup(dir);
  *strrchr(parent, '/') = '\0';
  char *p = tu_path(parent, name);
  free(parent);
  return p;
}

static char *new_index_dir(const char *tag) {
  char *base = tu_tmpdir(tag);
  char *dir = tu_path(base, "ix");
  free(base);
  return dir;
}

/* Imports d[0..n) into dir (via a file); returns the reference. */
static size_t import_docs(const char *dir, doc *d, size_t n, doc **fin) {
  sbuf sb = {0};
  for (size_t i = 0; i < n; i++)
    doc_line(&sb, &d[i], (int)(i % 5 == 0));
  if (sb.len && sb.p[sb.len - 1] == '\n') sb.len--; /* no newline after the last line */
  char *file = sibling(dir, "import.tsv");
  tu_write_file(file, sb.p, sb.len);
  result r = RUN("import", dir, file);
  expect_code(&r, 0);
  assert_int_equal(r.outlen, 0);
  expect_one_line(&r, dir); /* the summary */
  assert_non_null(strstr(r.err, "documents"));
  tu_cli_free(&r);
  free(file);
  free(sb.p);
  return reference_final(d, n, fin);
}

/* Gets every key of fin[] and `absent` keys that are not there, through
 * `get DIR -`, in a random order; compares everything printed. */
static void check_get_all(tu_rng *r, const char *dir, const doc *fin, size_t m, size_t absent) {
  size_t nq = m + absent;
  doc *q = malloc(nq * sizeof *q);
  memcpy(q, fin, m * sizeof *q);
  for (size_t i = m; i < nq; i++) {
    do
      random_key(r, q[i].key, &q[i].klen);
    while (reference_find(fin, m, q[i].key, q[i].klen));
  }
  for (size_t i = nq; r && i > 1; i--) { /* shuffle */
    size_t j = (size_t)tu_below(r, i);
    doc t = q[i - 1];
    q[i - 1] = q[j];
    q[j] = t;
  }
  sbuf in = {0}, out = {0}, err = {0};
  SB_STR(&out, "");
  SB_STR(&err, "");
  for (size_t i = 0; i < nq; i++) {
    SB_ESC(&in, q[i].key, q[i].klen);
    SB_STR(&in, "\n");
    const doc *f = reference_find(fin, m, q[i].key, q[i].klen);
    if (f) {
      SB_ESC(&out, f->key, f->klen);
      SB_STR(&out, "\t");
      SB_ESC(&out, f->val, f->vlen);
      SB_STR(&out, "\n");
    } else {
      SB_STR(&err, "not found: ");
      SB_ESC(&err, q[i].key, q[i].klen);
      SB_STR(&err, "\n");
    }
  }
  result res = RUN_IN(in.p, in.len, "get", dir, "-");
  expect_code(&res, absent ? 1 : 0);
  assert_int_equal(res.outlen, out.len);
  assert_memory_equal(res.out, out.p, out.len);
  expect_err(&res, err.p);
  tu_cli_free(&res);
  free(in.p);
  free(out.p);
  free(err.p);
  free(q);
}

/* ---- tests --------------------------------------------------------------- */

static void test_import_then_get_matches_reference(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 11);
  char *dir = new_index_dir("cli-import");
  size_t n = 3000 * tu_scale();
  doc *d = random_docs(&r, n), *fin;
  size_t m = import_docs(dir, d, n, &fin);
  check_get_all(&r, dir, fin, m, 200);
  check_get_all(&r, dir, fin, m, 0);
  /* The argument form, with keys found and missing. */
  sbuf k1 = {0}, k2 = {0}, want = {0};
  SB_ESC(&k1, fin[0].key, fin[0].klen);
  SB_ESC(&k2, fin[m - 1].key, fin[m - 1].klen);
  SB_STR(&want, k2.p);
  SB_STR(&want, "\t");
  SB_ESC(&want, fin[m - 1].val, fin[m - 1].vlen);
  SB_STR(&want, "\n");
  SB_STR(&want, k1.p);
  SB_STR(&want, "\t");
  SB_ESC(&want, fin[0].val, fin[0].vlen);
  SB_STR(&want, "\n");
  result res = RUN("get", dir, "--", k2.p, k1.p);
  expect_code(&res, 0);
  assert_string_equal(res.out, want.p);
  assert_int_equal(res.errlen, 0);
  tu_cli_free(&res);
  res = RUN("get", dir, "--", k1.p, "absent\\x00key");
  expect_code(&res, 1);
  expect_err(&res, "not found: absent\\x00key\n");
  tu_cli_free(&res);
  free(k1.p);
  free(k2.p);
  free(want.p);
  free(fin);
  free(d);
  free(dir);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits output into sorted lines (modifies s). */
static size_t sorted_lines(char *s, char ***out) {
  size_t n = (size_t)count_lines(s), i = 0;
  char **v = calloc(n + 1, sizeof *v);
  for (char *p = s; *p; i++) {
    char *nl = strchr(p, '\n');
    *nl = '\0';
    v[i] = p;
    p = nl + 1;
  }
  qsort(v, n, sizeof *v, cmp_str);
  *out = v;
  return n;
}

static void test_search_matches_reference(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 12);
  char *dir = new_index_dir("cli-search");
  size_t n = 2000;
  doc *d = random_docs(&r, n), *fin;
  size_t m = import_docs(dir, d, n, &fin);
  for (int tag = 0; tag < 7; tag += 3) {
    for (int grp = 0; grp < 3; grp++) {
      char t1[32], t2[32];
      snprintf(t1, sizeof t1, "tag:t%d", tag);
      snprintf(t2, sizeof t2, "grp:%d", grp);
      sbuf want = {0};
      SB_STR(&want, "");
      for (size_t i = 0; i < m; i++) {
        if (fin[i].tag != tag || fin[i].grp != grp) continue;
        SB_ESC(&want, fin[i].key, fin[i].klen);
        SB_STR(&want, "\n");
      }
      result res = RUN("search", dir, t1, t2);
      expect_code(&res, 0);
      assert_int_equal(res.errlen, 0);
      char **got, **exp;
      size_t ng = sorted_lines(res.out, &got), ne = sorted_lines(want.p, &exp);
      assert_int_equal(ng, ne);
      for (size_t i = 0; i < ng; i++)
        assert_string_equal(got[i], exp[i]);
      free(got);
      free(exp);
      tu_cli_free(&res);
      res = RUN("search", "--count", dir, t1, t2);
      expect_code(&res, 0);
      assert_int_equal(strtoull(res.out, NULL, 10), ne);
      tu_cli_free(&res);
      free(want.p);
    }
  }
  result res = RUN("search", dir, "tag:none");
  expect_code(&res, 0);
  assert_int_equal(res.outlen, 0);
  tu_cli_free(&res);
  free(fin);
  free(d);
  free(dir);
}

static void test_put_get_delete_search(void **state) {
  (void)state;
  char *dir = new_index_dir("cli-put");
  result r = RUN("create", dir);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("put", dir, "k\\x00\\t1", "v\\\\1\\n", "f:x", "g:a:b");
  expect_code(&r, 0);
  assert_int_equal(r.outlen + r.errlen, 0);
  tu_cli_free(&r);
  r = RUN("put", dir, "k2", "", "f:x");
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("put", dir, "k2", "replaced", "f:y");
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("get", dir, "k\\x00\\t1", "k2");
  expect_code(&r, 0);
  assert_string_equal(r.out, "k\\x00\\t1\tv\\\\1\\n\nk2\treplaced\n");
  tu_cli_free(&r);
  r = RUN("search", dir, "f:x");
  expect_code(&r, 0);
  assert_string_equal(r.out, "k\\x00\\t1\n"); /* k2 lost f:x when replaced */
  tu_cli_free(&r);
  r = RUN("search", "--values", dir, "g:a:b", "f:x");
  expect_code(&r, 0);
  assert_string_equal(r.out, "k\\x00\\t1\tv\\\\1\\n\n");
  tu_cli_free(&r);
  r = RUN("delete", dir, "k2", "nope");
  expect_code(&r, 1); /* nope was missing; k2 is still deleted */
  expect_err(&r, "not found: nope\n");
  tu_cli_free(&r);
  r = RUN("get", dir, "k2");
  expect_code(&r, 1);
  expect_err(&r, "not found: k2\n");
  assert_int_equal(r.outlen, 0);
  tu_cli_free(&r);
  r = RUN_IN("k\\x00\\t1\n", 9, "delete", dir, "-");
  expect_code(&r, 0);
  assert_int_equal(r.errlen, 0);
  tu_cli_free(&r);
  r = RUN("search", dir, "f:x");
  expect_code(&r, 0);
  assert_int_equal(r.outlen, 0);
  tu_cli_free(&r);
  r = RUN("put", dir, "bad\\q", "v");
  expect_code(&r, 2);
  expect_one_line(&r, "tern: key 'bad\\q': bad escape \\q");
  tu_cli_free(&r);
  r = RUN("put", dir, "k", "v", "noterm");
  expect_code(&r, 2);
  expect_one_line(&r, "tern: term 'noterm': term without 'field:'");
  tu_cli_free(&r);
  free(dir);
}

/* Reads back a few documents to tell whether the index changed. */
static void expect_unchanged(const char *dir, const doc *fin, size_t m, const char *never) {
  check_get_all(NULL, dir, fin, m > 50 ? 50 : m, 0);
  result r = RUN("get", dir, never);
  expect_code(&r, 1);
  tu_cli_free(&r);
}

static void test_malformed_import_changes_nothing(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 13);
  char *dir = new_index_dir("cli-bad");
  doc *d = random_docs(&r, 100), *fin;
  size_t m = import_docs(dir, d, 100, &fin);
  char *file = sibling(dir, "bad.tsv");
  static const struct {
    const char *line, *reason;
  } bad[] = {
      {"k\\q\tv", "bad escape \\q"},
      {"\tv", "empty key"},
      {"nokey", "no TAB after key 'nokey'"},
      {"k\tv\tnofield", "term without 'field:' in column 3"},
      {"k\tv\t:t", "empty field in column 3"},
      {"k\tv\tf:", "empty term in column 3"},
      {"k\tv\tf:\\x4", "bad escape \\x4 in column 3"},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0] + 2; c++) {
    size_t at = 1 + (size_t)tu_below(&r, 40); /* 1-based line of the bad one */
    sbuf sb = {0}, want = {0};
    for (size_t i = 1; i < at + 5; i++) {
      char line[64];
      if (i == at && c < sizeof bad / sizeof bad[0]) {
        SB_STR(&sb, bad[c].line);
        SB_STR(&sb, "\n");
      } else if (i == at) { /* over the limits */
        size_t len = c % 2 ? 1025 : 256;
        char *big = malloc(len + 16);
        memset(big, 'x', len);
        strcpy(big + len, c % 2 ? "\tv" : ":t");
        SB_STR(&sb, c % 2 ? "" : "k\tv\t");
        SB_STR(&sb, big);
        SB_STR(&sb, "\n");
        free(big);
      } else {
        snprintf(line, sizeof line, "never%zu\tv\n", i);
        SB_STR(&sb, line);
      }
    }
    const char *reason = c < sizeof bad / sizeof bad[0] ? bad[c].reason
                         : c % 2                        ? "key longer than 1024 bytes"
                                                        : "field longer than 255 bytes in column 3";
    tu_write_file(file, sb.p, sb.len);
    char prefix[64];
    snprintf(prefix, sizeof prefix, ":%zu: ", at);
    SB_STR(&want, file);
    SB_STR(&want, prefix);
    SB_STR(&want, reason);
    SB_STR(&want, "\n");
    result res = RUN("import", dir, file);
    expect_code(&res, 2);
    expect_err(&res, want.p);
    tu_cli_free(&res);
    /* The same from standard input: no file name. */
    res = RUN_IN(sb.p, sb.len, "import", "--quiet", dir);
    expect_code(&res, 2);
    expect_err(&res, want.p + strlen(file) + 1);
    tu_cli_free(&res);
    expect_unchanged(dir, fin, m, "never1");
    free(sb.p);
    free(want.p);
  }
  free(file);
  free(fin);
  free(d);
  free(dir);
}

static void test_import_details(void **state) {
  (void)state;
  char *dir = new_index_dir("cli-details");
  /* CRLF, a blank line, a duplicate (last wins), no final newline. */
  const char in[] = "a\t1\r\n\r\nb\tx\\ty\tf:1\r\n\na\t2";
  result r = RUN_IN(in, sizeof in - 1, "import", "-q", dir);
  expect_code(&r, 0);
  assert_int_equal(r.errlen, 0); /* --quiet */
  tu_cli_free(&r);
  r = RUN("get", dir, "a", "b");
  expect_code(&r, 0);
  assert_string_equal(r.out, "a\t2\nb\tx\\ty\n");
  tu_cli_free(&r);
  /* A large binary value: longer than the reader's and the writer's buffers. */
  tu_rng rng;
  tu_rng_init(&rng, 16);
  size_t vlen = (3 << 20) + 7;
  uint8_t *big = malloc(vlen);
  tu_fill(&rng, big, vlen);
  sbuf line = {0};
  SB_STR(&line, "big\t");
  SB_ESC(&line, big, vlen);
  SB_STR(&line, "\tf:big\n");
  r = RUN_IN(line.p, line.len, "import", "-q", dir);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("get", dir, "big");
  expect_code(&r, 0);
  line.len -= strlen("\tf:big\n");
  SB_STR(&line, "\n");
  assert_int_equal(r.outlen, line.len);
  assert_memory_equal(r.out, line.p, line.len);
  tu_cli_free(&r);
  free(line.p);
  free(big);
  /* Options given at creation stick; a different one for an existing index fails. */
  char *dir2 = new_index_dir("cli-opts");
  r = RUN_IN("k\tv\n", 4, "import", "--threshold", "4", "--inline-max", "100", dir2);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN_IN("k\tw\n", 4, "import", "--threshold", "4", dir2);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN_IN("k\tx\n", 4, "import", "--threshold", "2", dir2);
  expect_code(&r, 2);
  expect_one_line(&r, "tern: ");
  assert_non_null(strstr(r.err, "--threshold 4, not 2"));
  tu_cli_free(&r);
  r = RUN("get", dir2, "k");
  assert_string_equal(r.out, "k\tw\n");
  tu_cli_free(&r);
  r = RUN("stats", "--json", dir2);
  expect_code(&r, 0);
  assert_non_null(strstr(r.out, "\"threshold\":4"));
  assert_non_null(strstr(r.out, "\"inline_max\":100"));
  tu_cli_free(&r);
  r = RUN("import", "--threshold", "65", dir2);
  expect_code(&r, 2);
  assert_non_null(strstr(r.err, "usage: tern import"));
  tu_cli_free(&r);
  /* --dry-run checks without touching DIR. */
  char *dir3 = new_index_dir("cli-dry");
  r = RUN_IN("k\tv\nbad\n", 9, "import", "--dry-run", dir3);
  expect_code(&r, 2);
  expect_err(&r, "2: no TAB after key 'bad'\n");
  tu_cli_free(&r);
  struct stat sb;
  assert_int_not_equal(stat(dir3, &sb), 0);
  free(dir);
  free(dir2);
  free(dir3);
}

/* The value of "name": in a JSON text, as an integer; -1 when absent. */
static long long json_int(const char *json, const char *name) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", name);
  const char *p = strstr(json, pat);
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Brackets balance outside strings, and the text is one object. */
static void expect_json_shape(const char *s) {
  int depth = 0, in_str = 0;
  assert_int_equal(s[0], '{');
  for (const char *p = s; *p; p++) {
    if (in_str) {
      if (*p == '\\')
        p++;
      else if (*p == '"')
        in_str = 0;
    } else if (*p == '"') {
      in_str = 1;
    } else if (*p == '{' || *p == '[') {
      depth++;
    } else if (*p == '}' || *p == ']') {
      assert_true(--depth >= 0);
      if (depth == 0) assert_string_equal(p + 1, "\n");
    }
  }
  assert_int_equal(depth, 0);
}

static void test_stats_compact_flush(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 14);
  char *dir = new_index_dir("cli-stats");
  doc *d = random_docs(&r, 500), *fin;
  size_t m = import_docs(dir, d, 500, &fin);
  result res = RUN("stats", dir, "--json");
  expect_code(&res, 0);
  expect_json_shape(res.out);
  static const char *const keys[] = {
      "docs",          "deleted",        "buffered",     "segments",     "id",    "max_doc",
      "livedocs_form", "livedocs_bytes", "terms",        "pulsed_terms", "bytes", "bytes_terms",
      "bytes_index",   "bytes_postings", "bytes_filter", "bytes_values"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", keys[i]);
    if (!strstr(res.out, pat)) fail_msg("stats --json lacks %s:\n%s", pat, res.out);
  }
  assert_int_equal(json_int(res.out, "docs"), (long long)m);
  assert_int_equal(json_int(res.out, "deleted"), 0);
  tu_cli_free(&res);
  res = RUN("stats", dir);
  expect_code(&res, 0);
  assert_non_null(strstr(res.out, "docs"));
  tu_cli_free(&res);
  /* Delete a few, then compaction drops them. */
  sbuf keys_in = {0};
  for (size_t i = 0; i < 10; i++) {
    SB_ESC(&keys_in, fin[i].key, fin[i].klen);
    SB_STR(&keys_in, "\n");
  }
  res = RUN_IN(keys_in.p, keys_in.len, "delete", dir, "-");
  expect_code(&res, 0);
  tu_cli_free(&res);
  res = RUN("flush", dir);
  expect_code(&res, 0);
  tu_cli_free(&res);
  res = RUN("stats", "--json", dir);
  assert_int_equal(json_int(res.out, "docs"), (long long)m - 10);
  tu_cli_free(&res);
  res = RUN("compact", dir);
  expect_code(&res, 0);
  tu_cli_free(&res);
  res = RUN("stats", "--json", dir);
  expect_code(&res, 0);
  assert_int_equal(json_int(res.out, "docs"), (long long)m - 10);
  assert_int_equal(json_int(res.out, "deleted"), 0);
  tu_cli_free(&res);
  check_get_all(&r, dir, fin + 10, m - 10, 5);
  free(keys_in.p);
  free(fin);
  free(d);
  free(dir);
}

static long long file_size(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  struct stat sb;
  assert_int_equal(stat(p, &sb), 0);
  free(p);
  return (long long)sb.st_size;
}

/* What a newcomer meets first: singular counts, a silent import when stderr
 * is not a terminal, the catalog in stats, long keys cut in errors, and
 * `get` answering the keys before a malformed one. */
static void test_newcomer_details(void **state) {
  (void)state;
  char *dir = new_index_dir("cli-newcomer");
  const char one[] = "a\t1\tf:x\n";
  result r = RUN_IN(one, sizeof one - 1, "import", dir);
  expect_code(&r, 0);
  /* Not a terminal: no progress line, only the summary. */
  expect_one_line(&r, dir);
  if (!strstr(r.err, ": 1 document imported in ")) fail_msg("summary: %s", r.err);
  tu_cli_free(&r);
  const char more[] = "b\t2\nc\t3\n";
  r = RUN_IN(more, sizeof more - 1, "import", dir);
  if (!strstr(r.err, ": 2 documents imported in ")) fail_msg("summary: %s", r.err);
  tu_cli_free(&r);

  r = RUN("stats", "--json", dir);
  expect_code(&r, 0);
  long long cat = json_int(r.out, "catalog_bytes");
  assert_true(cat > 0);
  assert_int_equal(cat, file_size(dir, "catalog.mdb"));
  assert_int_equal(json_int(r.out, "total_bytes"), json_int(r.out, "bytes") + cat);
  tu_cli_free(&r);
  r = RUN("stats", dir);
  char line[64];
  snprintf(line, sizeof line, "\ncatalog   %lld bytes\n", cat);
  if (!strstr(r.out, line)) fail_msg("stats table lacks '%s':\n%s", line, r.out);
  tu_cli_free(&r);

  /* A 5000-byte key: the error shows 64 bytes and the length. */
  char *longkey = malloc(5001);
  memset(longkey, 'k', 5000);
  longkey[5000] = '\0';
  r = RUN("get", dir, longkey);
  expect_code(&r, 2);
  expect_one_line(&r, "tern: key 'kkkk");
  assert_true(r.errlen < 200);
  assert_non_null(strstr(r.err, "(5000 bytes)"));
  tu_cli_free(&r);
  free(longkey);

  /* Streaming: a, b answered (and d reported missing) before the bad line. */
  const char keys[] = "a\nd\nb\n\\q\nc\n";
  r = RUN_IN(keys, sizeof keys - 1, "get", dir, "-");
  expect_code(&r, 2);
  assert_string_equal(r.out, "a\t1\nb\t2\n");
  assert_non_null(strstr(r.err, "4: bad escape"));
  assert_non_null(strstr(r.err, "not found: d\n"));
  tu_cli_free(&r);
  free(dir);
}

/* The path of the first *.tix file under dir (one level of subdirectories). */
static char *find_tix(const char *dir) {
  DIR *dh = opendir(dir);
  assert_non_null(dh);
  struct dirent *e;
  char *found = NULL;
  while (!found && (e = readdir(dh)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char *p = tu_path(dir, e->d_name);
    size_t n = strlen(e->d_name);
    struct stat sb;
    if (n > 4 && !strcmp(e->d_name + n - 4, ".tix")) {
      found = p;
      continue;
    }
    if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) found = find_tix(p);
    free(p);
  }
  closedir(dh);
  return found;
}

static void test_verify_finds_corruption(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 15);
  char *dir = new_index_dir("cli-verify");
  doc *d = random_docs(&r, 1000), *fin;
  size_t m = import_docs(dir, d, 1000, &fin);
  (void)m;
  result res = RUN("verify", dir);
  expect_code(&res, 0);
  char want[4096];
  snprintf(want, sizeof want, "%s: ok\n", dir);
  assert_string_equal(res.out, want);
  tu_cli_free(&res);
  char *tix = find_tix(dir);
  if (!tix) fail_msg("no *.tix file in %s", dir);
  size_t len;
  uint8_t *bytes = tu_read_file(tix, &len);
  assert_true(len > 0);
  bytes[len / 2] ^= 0x5a;
  tu_write_file(tix, bytes, len);
  res = RUN("verify", dir);
  expect_code(&res, 3);
  expect_one_line(&res, "tern: ");
  const char *base = strrchr(tix, '/') + 1;
  if (!strstr(res.err, base)) fail_msg("the report does not name %s:\n%s", base, res.err);
  tu_cli_free(&res);
  free(bytes);
  free(tix);
  free(fin);
  free(d);
  free(dir);
}

static void test_errors_are_one_line(void **state) {
  (void)state;
  char *base = tu_tmpdir("cli-err");
  char *missing = tu_path(base, "missing");
  char want[4096];
  snprintf(want, sizeof want, "tern: %s: not a tern index\n", missing);
  const char *const read_cmds[][5] = {
      {"get", missing, "k", NULL},      {"search", missing, "f:t", NULL},
      {"stats", missing, NULL, NULL},   {"verify", missing, NULL, NULL},
      {"put", missing, "k", "v"},       {"delete", missing, "k", NULL},
      {"compact", missing, NULL, NULL}, {"flush", missing, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof read_cmds / sizeof read_cmds[0]; i++) {
    result r = tu_cli_run(g_bin, NULL, read_cmds[i]);
    expect_code(&r, 2);
    expect_err(&r, want);
    assert_int_equal(r.outlen, 0);
    tu_cli_free(&r);
    struct stat sb;
    assert_int_not_equal(stat(missing, &sb), 0); /* never created */
  }
  /* A regular file where the index should be. */
  char *plain = tu_path(base, "plain");
  tu_write_file(plain, "hello\n", 6);
  snprintf(want, sizeof want, "tern: %s: ", plain);
  result r = RUN("get", plain, "k");
  expect_code(&r, 2);
  expect_one_line(&r, want);
  tu_cli_free(&r);
  r = RUN_IN("k\tv\n", 4, "import", plain);
  expect_code(&r, 2);
  expect_one_line(&r, want);
  tu_cli_free(&r);
  /* A missing input file: reported, and no index created. */
  char *nofile = tu_path(base, "nofile.tsv");
  snprintf(want, sizeof want, "tern: %s: No such file or directory\n", nofile);
  r = RUN("import", missing, nofile);
  expect_code(&r, 2);
  expect_err(&r, want);
  tu_cli_free(&r);
  struct stat sb;
  assert_int_not_equal(stat(missing, &sb), 0);
  /* Permission denied: root ignores permissions, so only as another user. */
  if (geteuid() != 0) {
    char *locked = tu_path(base, "locked");
    r = RUN_IN("k\tv\n", 4, "import", "-q", locked);
    expect_code(&r, 0);
    tu_cli_free(&r);
    assert_int_equal(chmod(locked, 0), 0);
    r = RUN("get", locked, "k");
    chmod(locked, 0700);
    expect_code(&r, 2);
    snprintf(want, sizeof want, "tern: %s: Permission denied", locked);
    expect_one_line(&r, want);
    tu_cli_free(&r);
    free(locked);
  } else {
    print_message("running as root: permission-denied case skipped\n");
  }
  free(nofile);
  free(plain);
  free(missing);
  free(base);
}

static void test_help_and_usage(void **state) {
  (void)state;
  static const char *const cmds[] = {"import", "get",     "put",   "delete", "search", "stats",
                                     "verify", "compact", "flush", "create", "help"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char want[64];
    snprintf(want, sizeof want, "usage: tern %s", cmds[i]);
    static const char *const flags[] = {"--help", "-h"};
    for (size_t f = 0; f < 2; f++) {
      result r = !strcmp(cmds[i], "help") ? RUN("help", "help") : RUN(cmds[i], flags[f]);
      expect_code(&r, 0);
      if (strncmp(r.out, want, strlen(want))) fail_msg("%s %s:\n%s", cmds[i], flags[f], r.out);
      assert_int_equal(r.errlen, 0);
      tu_cli_free(&r);
    }
    result r = RUN("help", cmds[i]);
    expect_code(&r, 0);
    assert_int_equal(strncmp(r.out, want, strlen(want)), 0);
    tu_cli_free(&r);
  }
  static const char *const top[] = {"--help", "-h", "help"};
  for (size_t i = 0; i < 3; i++) {
    result r = RUN(top[i]);
    expect_code(&r, 0);
    assert_int_equal(strncmp(r.out, "usage: tern COMMAND", 19), 0);
    tu_cli_free(&r);
  }
  result r = RUN("--version");
  expect_code(&r, 0);
  assert_int_equal(strncmp(r.out, "tern ", 5), 0);
  tu_cli_free(&r);
  /* Usage errors: message and usage on stderr, nothing on stdout, exit 2. */
  const char *const bad[][5] = {
      {NULL},
      {"frobnicate", NULL},
      {"--frobnicate", NULL},
      {"import", NULL},
      {"import", "--bogus", "d", NULL},
      {"import", "--threshold", NULL},
      {"import", "--threshold", "x", "d", NULL},
      {"import", "d", "f", "extra", NULL},
      {"get", NULL},
      {"get", "d", NULL},
      {"get", "d", "-z", NULL},
      {"put", "d", "k", NULL},
      {"delete", "d", NULL},
      {"search", "d", NULL},
      {"stats", "d", "e", NULL},
      {"stats", "--yaml", "d", NULL},
      {"verify", NULL},
      {"compact", "d", "e", NULL},
      {"help", "frobnicate", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = tu_cli_run(g_bin, NULL, bad[i]);
    if (r.code != 2 || r.outlen != 0 || !strstr(r.err, "usage: tern"))
      fail_msg("case %zu (%s): exit %d\nstdout: %s\nstderr: %s", i, bad[i][0] ? bad[i][0] : "-",
               r.code, r.out, r.err);
    assert_true(strncmp(r.err, "tern", 4) == 0);
    tu_cli_free(&r);
  }
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin || !*g_bin || access(g_bin, X_OK) != 0) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_and_usage),
      cmocka_unit_test(test_errors_are_one_line),
      cmocka_unit_test(test_put_get_delete_search),
      cmocka_unit_test(test_import_details),
      cmocka_unit_test(test_import_then_get_matches_reference),
      cmocka_unit_test(test_search_matches_reference),
      cmocka_unit_test(test_malformed_import_changes_nothing),
      cmocka_unit_test(test_stats_compact_flush),
      cmocka_unit_test(test_verify_finds_corruption),
      cmocka_unit_test(test_newcomer_details),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

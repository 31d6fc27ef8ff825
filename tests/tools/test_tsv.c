/* SPDX-License-Identifier: MIT */
/*
 * test_tsv.c — the CLI's escaping and TSV parsing (tools/tern/escape.c and
 * tsv.c, compiled into this test), against straightforward references:
 * a byte-at-a-time encoder, random alternative spellings of the same bytes,
 * and every malformed input the import rejects.
 */
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tools/tern/escape.c"
#include "tools/tern/tsv.c"

/* Bytes the random strings favour: every byte the escaping treats specially. */
static const uint8_t k_special[] = {'\\', '\t', '\n', '\r', 0, 0x7f, 0x80, 0xff, ':', 'x', 0x1b};

static void random_bytes(tu_rng *r, uint8_t *buf, size_t len) {
  for (size_t i = 0; i < len; i++)
    buf[i] = tu_below(r, 3) == 0 ? k_special[tu_below(r, sizeof k_special)] : (uint8_t)tu_next(r);
}

/* The reference encoder: one byte at a time, the rules of escape.h. */
static size_t ref_encode(const uint8_t *s, size_t len, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = s[i];
    const char *named = c == '\\'   ? "\\\\"
                        : c == '\t' ? "\\t"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                                    : NULL;
    if (named) {
      memcpy(out + o, named, 2);
      o += 2;
    } else if (c < 0x20 || c == 0x7f) {
      o += (size_t)sprintf(out + o, "\\x%02x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  return o;
}

/* Any valid spelling of s: raw bytes (except backslash, and in a TSV column
 * except TAB, newline and CR), \xHH in either case, or the named escape. */
static size_t random_spelling(tu_rng *r, const uint8_t *s, size_t len, char *out, int tsv) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = s[i];
    unsigned pick = (unsigned)tu_below(r, 3);
    int must_escape = c == '\\' || (tsv && (c == '\t' || c == '\n' || c == '\r'));
    if (must_escape && pick == 0) pick = 1;
    if (pick == 0) {
      out[o++] = (char)c;
    } else if (pick == 1) {
      o += (size_t)sprintf(out + o, tu_below(r, 2) ? "\\x%02x" : "\\x%02X", c);
    } else {
      o += ref_encode(&c, 1, out + o);
    }
  }
  return o;
}

static void test_encode_matches_reference_and_round_trips(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 1);
  uint8_t src[600];
  char enc[4 * sizeof src], ref[4 * sizeof src];
  for (unsigned it = 0; it < 3000 * tu_scale(); it++) {
    size_t len = it < 2 ? it : (size_t)tu_below(&r, sizeof src + 1);
    random_bytes(&r, src, len);
    size_t n = esc_encode(src, len, enc);
    assert_true(n <= ESC_ENCODED_MAX(len));
    assert_int_equal(n, ref_encode(src, len, ref));
    assert_memory_equal(enc, ref, n);
    assert_null(memchr(enc, '\t', n));
    assert_null(memchr(enc, '\n', n));
    assert_null(memchr(enc, '\r', n));
    size_t dlen = 12345;
    esc_error err;
    assert_int_equal(esc_decode(enc, n, enc, &dlen, &err), 0); /* in place */
    assert_int_equal(dlen, len);
    assert_memory_equal(enc, src, len);
  }
}

/* Long plain runs with a rare byte needing an escape at any offset, among
 * bytes that differ from one by a bit (0x20, 0x5b, 0x7e, 0x80, 0x9f, 0xdc,
 * 0xff...): the encoder's eight-bytes-a-test path must stop exactly at it. */
static void test_encode_word_path(void **state) {
  (void)state;
  static const uint8_t near[] = {0x20, 0x21, 0x3f, 0x5b, 0x5d, 0x7e, 0x80, 0x9f,
                                 0xa0, 0xdc, 0xfe, 0xff, 'a', 'z', '0', 0x40};
  static const uint8_t must[] = {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1f, 0x5c, 0x7f};
  tu_rng r;
  tu_rng_init(&r, 3);
  uint8_t src[80];
  char enc[4 * sizeof src], ref[4 * sizeof src];
  for (unsigned it = 0; it < 20000 * tu_scale(); it++) {
    size_t len = (size_t)tu_below(&r, sizeof src + 1);
    for (size_t i = 0; i < len; i++)
      src[i] = near[tu_below(&r, sizeof near)];
    for (unsigned k = (unsigned)tu_below(&r, 3); k > 0 && len > 0; k--)
      src[tu_below(&r, len)] = must[tu_below(&r, sizeof must)];
    size_t n = esc_encode(src, len, enc);
    assert_int_equal(n, ref_encode(src, len, ref));
    assert_memory_equal(enc, ref, n);
  }
}

static void test_decode_any_spelling(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 2);
  uint8_t src[300];
  char spelled[4 * sizeof src], out[4 * sizeof src];
  for (unsigned it = 0; it < 3000 * tu_scale(); it++) {
    size_t len = (size_t)tu_below(&r, sizeof src + 1);
    random_bytes(&r, src, len);
    size_t n = random_spelling(&r, src, len, spelled, 0);
    size_t dlen;
    esc_error err;
    assert_int_equal(esc_decode(spelled, n, out, &dlen, &err), 0); /* separate buffer */
    assert_int_equal(dlen, len);
    assert_memory_equal(out, src, len);
  }
}

static void expect_bad(const char *in, size_t at, const char *reason) {
  char buf[64];
  size_t len = strlen(in), dlen;
  memcpy(buf, in, len);
  esc_error err;
  assert_int_equal(esc_decode(buf, len, buf, &dlen, &err), -1);
  assert_int_equal(err.offset, at);
  if (strcmp(err.reason, reason)) fail_msg("%s: reason '%s', want '%s'", in, err.reason, reason);
}

static void test_decode_malformed(void **state) {
  (void)state;
  expect_bad("\\q", 0, "bad escape \\q");
  expect_bad("ab\\", 2, "bad escape: \\ at end of field");
  expect_bad("\\", 0, "bad escape: \\ at end of field");
  expect_bad("a\\x", 1, "bad escape \\x");
  expect_bad("\\x4", 0, "bad escape \\x4");
  expect_bad("\\xg0", 0, "bad escape \\xg0");
  expect_bad("\\x0g", 0, "bad escape \\x0g");
  expect_bad("\\X41", 0, "bad escape \\X");
  expect_bad("ok\\\\\\0", 4, "bad escape \\0");
  expect_bad("\\\x01", 0, "bad escape \\<0x01>");
  expect_bad("\\ ", 0, "bad escape \\<0x20>");
  expect_bad("\\T", 0, "bad escape \\T");
}

/* Reads `data` back through a reader with the smallest buffer, so that lines
 * cross buffer boundaries and force it to grow. */
static void read_all_lines(const char *data, size_t len, char ***lines, size_t **lens, size_t *n) {
  char *dir = tu_tmpdir("tsv");
  char *path = tu_path(dir, "in.tsv");
  tu_write_file(path, data, len);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  tsv_reader rd;
  assert_int_equal(tsv_reader_init(&rd, fd, 1), 0);
  size_t cap = 16;
  *lines = malloc(cap * sizeof **lines);
  *lens = malloc(cap * sizeof **lens);
  *n = 0;
  char *line;
  size_t llen;
  int rc;
  while ((rc = tsv_read_line(&rd, &line, &llen)) == 1) {
    if (*n == cap) {
      cap *= 2;
      *lines = realloc(*lines, cap * sizeof **lines);
      *lens = realloc(*lens, cap * sizeof **lens);
    }
    (*lines)[*n] = malloc(llen + 1);
    memcpy((*lines)[*n], line, llen);
    (*lens)[*n] = llen;
    (*n)++;
    assert_int_equal(rd.line, *n);
  }
  assert_int_equal(rc, 0);
  assert_int_equal(rd.bytes_in, len);
  tsv_reader_free(&rd);
  close(fd);
  free(path);
  free(dir);
}

static void free_lines(char **lines, size_t *lens, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(lines[i]);
  free(lines);
  free(lens);
}

static void test_reader_lines(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 3);
  for (unsigned round = 0; round < 20 * tu_scale(); round++) {
    size_t nlines = (size_t)tu_below(&r, 200);
    size_t cap = 1 << 16, len = 0;
    char *data = malloc(cap);
    size_t *want_len = malloc((nlines + 1) * sizeof *want_len);
    size_t *want_off = malloc((nlines + 1) * sizeof *want_off);
    int unterminated = 0;
    for (size_t i = 0; i < nlines; i++) {
      /* Mostly short lines, some longer than the reader's starting buffer. */
      size_t ll = tu_below(&r, 10) == 0 ? (size_t)tu_below(&r, 9000) : (size_t)tu_below(&r, 40);
      while (len + ll + 2 > cap)
        data = realloc(data, cap *= 2);
      want_off[i] = len;
      want_len[i] = ll;
      for (size_t k = 0; k < ll; k++) {
        char c = (char)('a' + tu_below(&r, 26));
        data[len + k] = tu_below(&r, 50) == 0 ? '\r' : c; /* a CR inside a line stays */
      }
      if (ll > 0 && data[len + ll - 1] == '\r') data[len + ll - 1] = 'z';
      len += ll;
      int last = i + 1 == nlines;
      if (last && tu_below(&r, 2)) { /* final line without newline */
        unterminated = 1;
        continue;
      }
      if (tu_below(&r, 3) == 0) data[len++] = '\r'; /* CRLF */
      data[len++] = '\n';
    }
    char **lines;
    size_t *lens, n;
    read_all_lines(data, len, &lines, &lens, &n);
    /* A final empty line without newline is no line at all. */
    size_t expect = nlines;
    if (unterminated && want_len[nlines - 1] == 0) expect--;
    assert_int_equal(n, expect);
    for (size_t i = 0; i < n; i++) {
      assert_int_equal(lens[i], want_len[i]);
      assert_memory_equal(lines[i], data + want_off[i], lens[i]);
    }
    free_lines(lines, lens, n);
    free(data);
    free(want_len);
    free(want_off);
  }
}

static void test_reader_edge_cases(void **state) {
  (void)state;
  char **lines;
  size_t *lens, n;
  read_all_lines("", 0, &lines, &lens, &n);
  assert_int_equal(n, 0);
  free_lines(lines, lens, n);
  read_all_lines("\n\r\n\n", 4, &lines, &lens, &n);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(lens[i], 0);
  free_lines(lines, lens, n);
  read_all_lines("a\r", 2, &lines, &lens, &n); /* CR at end of input: a CRLF cut short */
  assert_int_equal(n, 1);
  assert_int_equal(lens[0], 1);
  free_lines(lines, lens, n);
  read_all_lines("a\0b\nc", 5, &lines, &lens, &n); /* NUL is an ordinary byte */
  assert_int_equal(n, 2);
  assert_int_equal(lens[0], 3);
  assert_memory_equal(lines[0], "a\0b", 3);
  assert_memory_equal(lines[1], "c", 1);
  free_lines(lines, lens, n);
}

/* A random document, encoded as an import line, parses back to itself. */
static void test_parse_doc_round_trip(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 4);
  tsv_doc doc;
  tsv_doc_init(&doc);
  enum { MAXT = 40 };
  static uint8_t key[TERN_KEY_MAX], val[3000], term[MAXT][64];
  static char field[MAXT][TERN_FIELD_MAX + 1];
  size_t tlen[MAXT];
  static char line[4 * (sizeof key + sizeof val + sizeof term + sizeof field) + 2 * MAXT + 2];
  for (unsigned it = 0; it < 2000 * tu_scale(); it++) {
    size_t klen = 1 + (size_t)tu_below(&r, it % 10 == 0 ? TERN_KEY_MAX : 30);
    size_t vlen = (size_t)tu_below(&r, it % 10 == 1 ? sizeof val + 1 : 20);
    size_t nt = (size_t)tu_below(&r, it % 7 == 0 ? MAXT + 1 : 4);
    random_bytes(&r, key, klen);
    random_bytes(&r, val, vlen);
    size_t n = esc_encode(key, klen, line);
    line[n++] = '\t';
    n += random_spelling(&r, val, vlen, line + n, 1);
    for (size_t t = 0; t < nt; t++) {
      size_t flen = 1 + (size_t)tu_below(&r, it % 13 == 0 ? TERN_FIELD_MAX : 8);
      for (size_t k = 0; k < flen; k++)
        field[t][k] = (char)(1 + tu_below(&r, 255));
      for (size_t k = 0; k < flen; k++)
        if (field[t][k] == ':') field[t][k] = ';'; /* raw ':' would end the field */
      field[t][flen] = 0;
      tlen[t] = 1 + (size_t)tu_below(&r, sizeof term[t]);
      random_bytes(&r, term[t], tlen[t]);
      line[n++] = '\t';
      n += esc_encode(field[t], flen, line + n);
      line[n++] = ':';
      n += esc_encode(term[t], tlen[t], line + n); /* may hold ':' */
    }
    assert_true(n <= sizeof line);
    tsv_error err;
    if (tsv_parse_doc(line, n, &doc, &err)) fail_msg("iteration %u: %s", it, err.reason);
    assert_int_equal(doc.klen, klen);
    assert_memory_equal(doc.key, key, klen);
    assert_int_equal(doc.vlen, vlen);
    assert_memory_equal(doc.val, val, vlen);
    assert_int_equal(doc.nterms, nt);
    for (size_t t = 0; t < nt; t++) {
      assert_string_equal(doc.terms[t].field, field[t]);
      assert_int_equal(doc.terms[t].len, tlen[t]);
      assert_memory_equal(doc.terms[t].term, term[t], tlen[t]);
    }
  }
  tsv_doc_free(&doc);
}

static void expect_doc_error(const char *line, size_t len, const char *reason) {
  char *buf = malloc(len + 1);
  memcpy(buf, line, len);
  tsv_doc doc;
  tsv_doc_init(&doc);
  tsv_error err;
  int rc = tsv_parse_doc(buf, len, &doc, &err);
  if (rc != -1) fail_msg("accepted a malformed line (want '%s')", reason);
  if (strcmp(err.reason, reason)) fail_msg("reason '%s', want '%s'", err.reason, reason);
  tsv_doc_free(&doc);
  free(buf);
}

static void expect_doc_ok(const char *line, size_t len) {
  char *buf = malloc(len + 1);
  memcpy(buf, line, len);
  tsv_doc doc;
  tsv_doc_init(&doc);
  tsv_error err;
  if (tsv_parse_doc(buf, len, &doc, &err)) fail_msg("rejected: %s", err.reason);
  tsv_doc_free(&doc);
  free(buf);
}

/* "<prefix><n times c><suffix>" in a malloc'd buffer. */
static char *repeat(const char *prefix, char c, size_t n, const char *suffix, size_t *len) {
  size_t p = strlen(prefix), s = strlen(suffix);
  char *b = malloc(p + n + s + 1);
  memcpy(b, prefix, p);
  memset(b + p, c, n);
  memcpy(b + p + n, suffix, s + 1);
  *len = p + n + s;
  return b;
}

#define DOC_ERR(lit, reason) expect_doc_error(lit, sizeof(lit) - 1, reason)
#define DOC_OK(lit) expect_doc_ok(lit, sizeof(lit) - 1)

static void test_parse_doc_malformed(void **state) {
  (void)state;
  DOC_ERR("k\\q\tv", "bad escape \\q");
  DOC_ERR("k\tv\\", "bad escape: \\ at end of field");
  DOC_ERR("k\tv\tf:\\xZZ", "bad escape \\xZZ in column 3");
  DOC_ERR("k\tv\tf\\:t", "bad escape: \\ at end of field in column 3");
  DOC_ERR("\tv", "empty key");
  DOC_ERR("\\x\tv", "bad escape \\x");
  DOC_ERR("key-without-tab", "no TAB after key 'key-without-tab'");
  DOC_ERR("k\tv\tnocolon", "term without 'field:' in column 3");
  DOC_ERR("k\tv\ta:b\tnocolon", "term without 'field:' in column 4");
  DOC_ERR("k\tv\t:t", "empty field in column 3");
  DOC_ERR("k\tv\tf:", "empty term in column 3");
  DOC_ERR("k\tv\t", "term without 'field:' in column 3"); /* trailing TAB: empty column */
  DOC_ERR("k\tv\ta\\x00b:t", "NUL byte in field in column 3");
  DOC_OK("k\tv\ta:b\\x00");   /* NUL is fine in a term */
  DOC_OK("k\t");              /* empty value */
  DOC_OK("k\\x00\tv\tf:a:b"); /* term "a:b" */
  size_t len;
  char *b = repeat("", 'k', TERN_KEY_MAX, "\tv", &len);
  expect_doc_ok(b, len);
  free(b);
  b = repeat("", 'k', TERN_KEY_MAX + 1, "\tv", &len);
  expect_doc_error(b, len, "key longer than 1024 bytes");
  free(b);
  b = repeat("", '\\', 2 * TERN_KEY_MAX, "\tv", &len); /* 1024 escaped backslashes */
  expect_doc_ok(b, len);
  free(b);
  b = repeat("k\tv\t", 'f', TERN_FIELD_MAX, ":t", &len);
  expect_doc_ok(b, len);
  free(b);
  b = repeat("k\tv\t", 'f', TERN_FIELD_MAX + 1, ":t", &len);
  expect_doc_error(b, len, "field longer than 255 bytes in column 3");
  free(b);
  b = repeat("k\tv\tf:", 't', TERN_KEY_MAX + 1, "", &len);
  expect_doc_error(b, len, "term longer than 1024 bytes in column 3");
  free(b);
  b = repeat("k\t", 'v', TERN_VALUE_MAX + 1, "", &len);
  expect_doc_error(b, len, "value longer than 16777216 bytes");
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_matches_reference_and_round_trips),
      cmocka_unit_test(test_encode_word_path),
      cmocka_unit_test(test_decode_any_spelling),
      cmocka_unit_test(test_decode_malformed),
      cmocka_unit_test(test_reader_lines),
      cmocka_unit_test(test_reader_edge_cases),
      cmocka_unit_test(test_parse_doc_round_trip),
      cmocka_unit_test(test_parse_doc_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

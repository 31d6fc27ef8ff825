/* SPDX-License-Identifier: MIT */
/*
 * tsv.c — the line reader and the parsers of import lines, keys and terms
 * (see tsv.h for the format).
 */
#include "tsv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"

int tsv_reader_init(tsv_reader *r, int fd, size_t cap) {
  memset(r, 0, sizeof *r);
  r->fd = fd;
  r->cap = cap < 4096 ? 4096 : cap;
  r->buf = malloc(r->cap);
  return r->buf ? 0 : -ENOMEM;
}

void tsv_reader_free(tsv_reader *r) {
  free(r->buf);
  r->buf = NULL;
}

/* Makes room after `end`: first by moving the unread bytes to the front,
 * then by doubling the buffer. */
static int make_room(tsv_reader *r) {
  if (r->pos > 0) {
    memmove(r->buf, r->buf + r->pos, r->end - r->pos);
    r->end -= r->pos;
    r->pos = 0;
  }
  if (r->end < r->cap) return 0;
  if (r->cap >= TSV_LINE_MAX) return -E2BIG;
  size_t ncap = r->cap * 2 > TSV_LINE_MAX ? TSV_LINE_MAX : r->cap * 2;
  char *nbuf = realloc(r->buf, ncap);
  if (!nbuf) return -ENOMEM;
  r->buf = nbuf;
  r->cap = ncap;
  return 0;
}

static int fill(tsv_reader *r) {
  int rc = make_room(r);
  if (rc) return rc;
  for (;;) {
    ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
    if (n > 0) {
      r->end += (size_t)n;
      r->bytes_in += (uint64_t)n;
      return 0;
    }
    if (n == 0) {
      r->eof = 1;
      return 0;
    }
    if (errno != EINTR) return -errno;
  }
}

static int hand_out(tsv_reader *r, size_t len, size_t next, char **line, size_t *outlen) {
  *line = r->buf + r->pos;
  if (len > 0 && (*line)[len - 1] == '\r') len--;
  *outlen = len;
  r->pos = next;
  r->scan = 0;
  r->line++;
  return 1;
}

int tsv_read_line(tsv_reader *r, char **line, size_t *len) {
  for (;;) {
    size_t from = r->pos + r->scan;
    char *nl = memchr(r->buf + from, '\n', r->end - from);
    if (nl) {
      size_t at = (size_t)(nl - r->buf);
      return hand_out(r, at - r->pos, at + 1, line, len);
    }
    r->scan = r->end - r->pos;
    if (r->eof) {
      if (r->pos == r->end) return 0;
      return hand_out(r, r->end - r->pos, r->end, line, len);
    }
    int rc = fill(r);
    if (rc) return rc;
  }
}

void tsv_doc_init(tsv_doc *doc) { memset(doc, 0, sizeof *doc); }

void tsv_doc_free(tsv_doc *doc) {
  free(doc->terms);
  memset(doc, 0, sizeof *doc);
}

static int decode(char *s, size_t len, size_t *outlen, tsv_error *err) {
  esc_error e;
  if (esc_decode(s, len, s, outlen, &e) == 0) return 0;
  snprintf(err->reason, sizeof err->reason, "%s", e.reason);
  return -1;
}

/* Shows an escaped column in a reason, shortened when long. */
static void quote(char *dst, size_t cap, const char *s, size_t len) {
  const size_t shown = 40;
  snprintf(dst, cap, "'%.*s%s'", (int)(len > shown ? shown : len), s, len > shown ? "..." : "");
}

int tsv_parse_key(char *s, size_t len, size_t *klen, tsv_error *err) {
  if (decode(s, len, klen, err)) return -1;
  if (*klen == 0) {
    snprintf(err->reason, sizeof err->reason, "empty key");
    return -1;
  }
  if (*klen > TERN_KEY_MAX) {
    snprintf(err->reason, sizeof err->reason, "key longer than %u bytes", TERN_KEY_MAX);
    return -1;
  }
  return 0;
}

int tsv_parse_value(char *s, size_t len, size_t *vlen, tsv_error *err) {
  if (decode(s, len, vlen, err)) return -1;
  if (*vlen > TERN_VALUE_MAX) {
    snprintf(err->reason, sizeof err->reason, "value longer than %u bytes", TERN_VALUE_MAX);
    return -1;
  }
  return 0;
}

int tsv_parse_field(char *s, size_t len, tsv_error *err) {
  size_t flen;
  if (decode(s, len, &flen, err)) return -1;
  const char *why = flen == 0                 ? "empty field"
                    : flen > TERN_FIELD_MAX   ? "field longer than 255 bytes"
                    : memchr(s, '\0', flen) ? "NUL byte in field"
                                              : NULL;
  if (why) {
    snprintf(err->reason, sizeof err->reason, "%s", why);
    return -1;
  }
  s[flen] = '\0';
  return 0;
}

int tsv_parse_term(char *s, size_t len, tern_term *t, tsv_error *err) {
  char *colon = memchr(s, ':', len);
  if (!colon) {
    snprintf(err->reason, sizeof err->reason, "term without 'field:'");
    return -1;
  }
  size_t flen_esc = (size_t)(colon - s), flen, tlen;
  char *term = colon + 1;
  size_t tlen_esc = len - flen_esc - 1;
  if (decode(s, flen_esc, &flen, err) || decode(term, tlen_esc, &tlen, err)) return -1;
  const char *why = NULL;
  if (flen == 0)
    why = "empty field";
  else if (flen > TERN_FIELD_MAX)
    why = "field longer than 255 bytes";
  else if (memchr(s, '\0', flen))
    why = "NUL byte in field";
  else if (tlen == 0)
    why = "empty term";
  else if (tlen > TERN_KEY_MAX)
    why = "term longer than 1024 bytes";
  if (why) {
    snprintf(err->reason, sizeof err->reason, "%s", why);
    return -1;
  }
  s[flen] = '\0'; /* at or before the ':', which decoding no longer needs */
  t->field = s;
  t->term = term;
  t->len = tlen;
  return 0;
}

/* Says which column of the line a term error is in. */
static int in_column(tsv_error *err, size_t column) {
  size_t n = strlen(err->reason);
  snprintf(err->reason + n, sizeof err->reason - n, " in column %zu", column);
  return -1;
}

static int push_term(tsv_doc *doc) {
  if (doc->nterms < doc->terms_cap) return 0;
  size_t ncap = doc->terms_cap ? doc->terms_cap * 2 : 16;
  tern_term *n = realloc(doc->terms, ncap * sizeof *n);
  if (!n) return -ENOMEM;
  doc->terms = n;
  doc->terms_cap = ncap;
  return 0;
}

int tsv_parse_doc(char *line, size_t len, tsv_doc *doc, tsv_error *err) {
  char *end = line + len;
  char *tab = memchr(line, '\t', len);
  if (!tab) {
    char shown[64];
    quote(shown, sizeof shown, line, len);
    snprintf(err->reason, sizeof err->reason, "no TAB after key %s", shown);
    return -1;
  }
  if (tsv_parse_key(line, (size_t)(tab - line), &doc->klen, err)) return -1;
  doc->key = line;
  char *val = tab + 1;
  char *vend = memchr(val, '\t', (size_t)(end - val));
  if (!vend) vend = end;
  if (tsv_parse_value(val, (size_t)(vend - val), &doc->vlen, err)) return -1;
  doc->val = val;
  doc->nterms = 0;
  for (char *col = vend; col < end;) {
    col++; /* past the TAB */
    char *cend = memchr(col, '\t', (size_t)(end - col));
    if (!cend) cend = end;
    if (push_term(doc)) return -ENOMEM;
    if (tsv_parse_term(col, (size_t)(cend - col), &doc->terms[doc->nterms], err))
      return in_column(err, doc->nterms + 3);
    doc->nterms++;
    col = cend;
  }
  return 0;
}

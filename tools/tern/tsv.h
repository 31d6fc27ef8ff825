/* SPDX-License-Identifier: MIT */
/*
 * tsv.h — reading tern's TSV input: lines from a file descriptor, and the
 * documents and keys those lines hold.
 *
 * An import line is
 *
 *     key TAB value [TAB field:term]...
 *
 * with every column in the escaped form of escape.h, so a raw TAB only ever
 * separates columns and a raw newline only ends lines.  A CR before the
 * newline is dropped (CRLF files), the last line needs no newline, and blank
 * lines are skipped.  A term column splits at its first raw ':'.
 *
 * Speed matters (imports of tens of millions of lines), so the reader does
 * large read(2)s into one buffer it reuses, lines are handed out as pointers
 * into that buffer, and decoding happens in place: parsing a line allocates
 * nothing (the term array grows only when a line has more terms than any
 * before it).
 */
#ifndef TERN_CLI_TSV_H
#define TERN_CLI_TSV_H

#include <stddef.h>
#include <stdint.h>

#include "tern.h"

/* The longest line the reader accepts: a value of TERN_VALUE_MAX bytes all
 * escaped as \xHH, plus room for many terms. */
#define TSV_LINE_MAX ((size_t)1 << 30)

typedef struct tsv_reader {
  int fd;
  char *buf;
  size_t cap;
  size_t pos;  /* start of the next line */
  size_t scan; /* bytes after pos already known to hold no newline */
  size_t end;  /* end of the bytes read */
  int eof;
  uint64_t line;     /* 1-based number of the line last returned */
  uint64_t bytes_in; /* bytes read from fd so far */
} tsv_reader;

/* Prepares to read fd with a buffer of `cap` bytes (it grows for longer
 * lines).  Returns 0 or -ENOMEM. */
int tsv_reader_init(tsv_reader *r, int fd, size_t cap);
void tsv_reader_free(tsv_reader *r);
/* Returns 1 and the next line (without its newline or CR-newline; writable,
 * valid until the next call) in *line and *len; 0 at the end of input; -errno on
 * a read error, -E2BIG for a line longer than TSV_LINE_MAX. */
int tsv_read_line(tsv_reader *r, char **line, size_t *len);

/* One parsed import line.  Pointers refer into the line. */
typedef struct tsv_doc {
  const char *key;
  size_t klen;
  const char *val;
  size_t vlen;
  tern_term *terms;
  size_t nterms;
  size_t terms_cap;
} tsv_doc;

/* Why a line or argument is malformed, one line of text. */
typedef struct tsv_error {
  char reason[160];
} tsv_error;

void tsv_doc_init(tsv_doc *doc);
void tsv_doc_free(tsv_doc *doc);

/* Parses (and decodes in place) an import line.  Returns 0, or -1 with the
 * reason in *err: a bad escape, an empty or too long key, no TAB after the
 * key, a value over TERN_VALUE_MAX, a term column without "field:", an empty
 * or too long field or term, a NUL in a field.  -ENOMEM when the term array
 * could not grow. */
int tsv_parse_doc(char *line, size_t len, tsv_doc *doc, tsv_error *err);

/* Decodes a key (1 to TERN_KEY_MAX bytes) in place; *klen gets its length.
 * Returns 0 or -1 with *err. */
int tsv_parse_key(char *s, size_t len, size_t *klen, tsv_error *err);
/* Decodes a value (at most TERN_VALUE_MAX bytes) in place. */
int tsv_parse_value(char *s, size_t len, size_t *vlen, tsv_error *err);
/* Parses "field:term" in place into *t; the field is NUL-terminated where
 * the ':' (or the end of the field's escaped form) was.  The field may not
 * hold NUL (it is a C string) and its escaped form no raw ':'. */
int tsv_parse_term(char *s, size_t len, tern_term *t, tsv_error *err);
/* Decodes a field name in place (1 to TERN_FIELD_MAX bytes, no NUL) and
 * NUL-terminates it: the field of "field:term" on its own. */
int tsv_parse_field(char *s, size_t len, tsv_error *err);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * escape.h — the escaped form of byte strings on tern's command line and in
 * its TSV files.
 *
 * Keys, values, fields and terms may hold any byte, but a TSV line must not
 * hold a raw TAB (column separator) or newline (line separator).  So each is
 * written escaped:
 *
 *     \\  backslash        \t  TAB        \n  newline        \r  carriage return
 *     \xHH  the byte 0xHH (two hex digits, either case)
 *
 * Every other byte stands for itself.  The encoder writes the four named
 * escapes, \xHH for the remaining control bytes (0x00-0x1F, 0x7F) so output is
 * safe on a terminal, and leaves bytes >= 0x80 raw so UTF-8 text stays
 * readable.  Decoding never makes a string longer, so it can run in place.
 */
#ifndef TERN_CLI_ESCAPE_H
#define TERN_CLI_ESCAPE_H

#include <stddef.h>

/* Why a string failed to decode: a one-line reason such as "bad escape \q". */
typedef struct esc_error {
  size_t offset; /* of the backslash in the escaped input */
  char reason[64];
} esc_error;

/* The longest encoding of `len` bytes (every byte as \xHH). */
#define ESC_ENCODED_MAX(len) (4 * (len))

/* Writes the escaped form of src[0..len) to dst (room for ESC_ENCODED_MAX(len)
 * bytes); returns its length. */
size_t esc_encode(const void *src, size_t len, char *dst);

/* Decodes in[0..len) into out, which may be `in` itself (or any address at or
 * before it: the output never overtakes the input).  On success returns 0 and
 * the decoded length in *outlen; on a malformed escape returns -1 and fills
 * *err. */
int esc_decode(const char *in, size_t len, char *out, size_t *outlen, esc_error *err);

#endif

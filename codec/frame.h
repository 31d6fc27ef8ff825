/* SPDX-License-Identifier: MIT */
/*
 * frame.h — the envelope of every tern file (docs/FORMAT.md, "Framing").
 *
 *   header, 32 bytes:  magic "tern" | kind (u32) | version (u32) | flags (u32) | segment id (16)
 *   body
 *   footer, 16 bytes:  magic "TEND" | body+header length (u32, low bits) | XXH3-64 of all bytes before the footer (u64)
 *
 * All integers little-endian.  A reader checks magic, kind, version (newer
 * than it knows: TERN_EVERSION) and segment id when it opens a file; small
 * files are checked whole (checksum too) at open, large ones by
 * tern_frame_verify_file().
 */
#ifndef TERN_FRAME_H
#define TERN_FRAME_H

#include "codec/io.h"

#include <stddef.h>
#include <stdint.h>

#define TERN_FRAME_HEADER_SIZE 32u
#define TERN_FRAME_FOOTER_SIZE 16u
#define TERN_SEGID_SIZE 16u

/* File kinds, four ASCII bytes read as a little-endian u32. */
#define TERN_FOURCC(a, b, c, d)                                                                    \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define TERN_KIND_TERMS TERN_FOURCC('T', 'I', 'M', ' ')    /* terms dictionary blocks */
#define TERN_KIND_INDEX TERN_FOURCC('T', 'I', 'X', ' ')    /* field table + terms index */
#define TERN_KIND_POSTINGS TERN_FOURCC('D', 'O', 'C', ' ') /* postings of non-pulsed terms */
#define TERN_KIND_FILTER TERN_FOURCC('F', 'L', 'T', ' ')   /* membership filter */
#define TERN_KIND_VALUES TERN_FOURCC('V', 'A', 'L', ' ')   /* values too large to inline */
#define TERN_KIND_LIVEDOCS TERN_FOURCC('L', 'I', 'V', ' ') /* deleted docs of one generation */

/* A fresh random segment id (getrandom(2)). */
int tern_segid_generate(uint8_t id[TERN_SEGID_SIZE]);

/* Encodes a header into out[TERN_FRAME_HEADER_SIZE]. */
void tern_frame_header(uint8_t *out, uint32_t kind, uint32_t version, const uint8_t *segid);
/* Checks a header: magic, kind, version <= max_version (else
 * TERN_EVERSION), and the segment id when `segid` is not NULL.  `what`
 * names the file in the message.  Sets *version. */
int tern_frame_check_header(const uint8_t *hdr, size_t len, uint32_t kind, uint32_t max_version,
                            const uint8_t *segid, const char *what, uint32_t *version);

/* Writers: the header first, the footer last (the wfile's running digest). */
int tern_frame_write_header(tern_wfile *w, uint32_t kind, uint32_t version, const uint8_t *segid);
int tern_frame_write_footer(tern_wfile *w);

/* A whole framed file in memory: checks header and footer and the checksum,
 * and sets the body (bytes between header and footer). */
int tern_frame_open_buffer(const uint8_t *buf, size_t len, uint32_t kind, uint32_t max_version,
                           const uint8_t *segid, const char *what, uint32_t *version,
                           const uint8_t **body, size_t *body_len);
/* The bytes a frame around a body of body_len takes: header, body, footer. */
size_t tern_frame_len(size_t body_len);
/* Frames a body already in place at dst + TERN_FRAME_HEADER_SIZE (dst
 * holds tern_frame_len(body_len) bytes): writes the header and the footer
 * with the checksum over both and the body.  For bytes built where they
 * are kept (a catalog record reserved in LMDB): no copy. */
void tern_frame_close(uint8_t *dst, uint32_t kind, uint32_t version, const uint8_t *segid,
                      size_t body_len);
/* Frames `body` into a new malloc'd buffer (for bytes kept in the catalog). */
int tern_frame_wrap(uint8_t **out, size_t *out_len, uint32_t kind, uint32_t version,
                    const uint8_t *segid, const void *body, size_t body_len);

/* Reads an open file whole, in large counted reads, and checks its frame
 * as tern_frame_open_buffer() does, without keeping it in memory. */
int tern_frame_verify_file(tern_rfile *f, uint32_t kind, uint32_t max_version,
                           const uint8_t *segid, uint32_t *version);

#endif

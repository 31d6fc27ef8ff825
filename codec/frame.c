/* SPDX-License-Identifier: MIT */
/*
 * frame.c — header and footer of every tern file (see frame.h).
 */
#include "codec/frame.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <xxhash.h>

#define FRAME_MAGIC TERN_FOURCC('t', 'e', 'r', 'n')
#define FOOTER_MAGIC TERN_FOURCC('T', 'E', 'N', 'D')

int tern_segid_generate(uint8_t id[TERN_SEGID_SIZE]) {
  size_t got = 0;
  while (got < TERN_SEGID_SIZE) {
    ssize_t n = getrandom(id + got, TERN_SEGID_SIZE - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return tern_fail_errno("getrandom");
    }
    got += (size_t)n;
  }
  return TERN_OK;
}

void tern_frame_header(uint8_t *out, uint32_t kind, uint32_t version, const uint8_t *segid) {
  tern_store32(out, FRAME_MAGIC);
  tern_store32(out + 4, kind);
  tern_store32(out + 8, version);
  tern_store32(out + 12, 0);
  if (segid)
    memcpy(out + 16, segid, TERN_SEGID_SIZE);
  else
    memset(out + 16, 0, TERN_SEGID_SIZE);
}

static void kind_name(uint32_t kind, char out[5]) {
  for (int i = 0; i < 4; i++) {
    uint8_t c = (uint8_t)(kind >> (8 * i));
    out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  out[4] = '\0';
}

int tern_frame_check_header(const uint8_t *hdr, size_t len, uint32_t kind, uint32_t max_version,
                            const uint8_t *segid, const char *what, uint32_t *version) {
  if (len < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE)
    return tern_fail(TERN_ECORRUPT, "%s: %zu bytes, too short for a tern file", what, len);
  if (tern_load32(hdr) != FRAME_MAGIC)
    return tern_fail(TERN_ECORRUPT, "%s: not a tern file (bad magic)", what);
  uint32_t k = tern_load32(hdr + 4);
  if (k != kind) {
    char want[5], got[5];
    kind_name(kind, want);
    kind_name(k, got);
    return tern_fail(TERN_ECORRUPT, "%s: file kind '%s', expected '%s'", what, got, want);
  }
  uint32_t v = tern_load32(hdr + 8);
  if (v == 0) return tern_fail(TERN_ECORRUPT, "%s: format version 0", what);
  if (v > max_version)
    return tern_fail(TERN_EVERSION, "%s: format version %u, this tern reads up to %u", what, v,
                     max_version);
  if (tern_load32(hdr + 12) != 0) return tern_fail(TERN_ECORRUPT, "%s: unknown header flags", what);
  if (segid && memcmp(hdr + 16, segid, TERN_SEGID_SIZE) != 0)
    return tern_fail(TERN_ECORRUPT, "%s: belongs to another segment (segment id differs)", what);
  if (version) *version = v;
  return TERN_OK;
}

int tern_frame_write_header(tern_wfile *w, uint32_t kind, uint32_t version, const uint8_t *segid) {
  uint8_t hdr[TERN_FRAME_HEADER_SIZE];
  tern_frame_header(hdr, kind, version, segid);
  return tern_wfile_append(w, hdr, sizeof hdr);
}

static void footer_encode(uint8_t *out, uint64_t len, uint64_t digest) {
  tern_store32(out, FOOTER_MAGIC);
  tern_store32(out + 4, (uint32_t)len);
  tern_store64(out + 8, digest);
}

int tern_frame_write_footer(tern_wfile *w) {
  uint8_t f[TERN_FRAME_FOOTER_SIZE];
  footer_encode(f, tern_wfile_offset(w), tern_wfile_digest(w));
  return tern_wfile_append(w, f, sizeof f);
}

/* Footer checks shared by the in-memory and the streaming paths. */
static int check_footer(const uint8_t *footer, uint64_t covered, uint64_t digest, const char *what) {
  if (tern_load32(footer) != FOOTER_MAGIC)
    return tern_fail(TERN_ECORRUPT, "%s: no footer (truncated or overwritten)", what);
  if (tern_load32(footer + 4) != (uint32_t)covered)
    return tern_fail(TERN_ECORRUPT, "%s: length in footer differs from the file's (truncated?)", what);
  if (tern_load64(footer + 8) != digest)
    return tern_fail(TERN_ECORRUPT, "%s: checksum mismatch", what);
  return TERN_OK;
}

int tern_frame_open_buffer(const uint8_t *buf, size_t len, uint32_t kind, uint32_t max_version,
                           const uint8_t *segid, const char *what, uint32_t *version,
                           const uint8_t **body, size_t *body_len) {
  TERN_TRY(tern_frame_check_header(buf, len, kind, max_version, segid, what, version));
  size_t covered = len - TERN_FRAME_FOOTER_SIZE;
  TERN_TRY(check_footer(buf + covered, covered, XXH3_64bits(buf, covered), what));
  *body = buf + TERN_FRAME_HEADER_SIZE;
  *body_len = covered - TERN_FRAME_HEADER_SIZE;
  return TERN_OK;
}

size_t tern_frame_len(size_t body_len) {
  return TERN_FRAME_HEADER_SIZE + body_len + TERN_FRAME_FOOTER_SIZE;
}

void tern_frame_close(uint8_t *dst, uint32_t kind, uint32_t version, const uint8_t *segid,
                      size_t body_len) {
  tern_frame_header(dst, kind, version, segid);
  size_t covered = TERN_FRAME_HEADER_SIZE + body_len;
  footer_encode(dst + covered, covered, XXH3_64bits(dst, covered));
}

int tern_frame_wrap(uint8_t **out, size_t *out_len, uint32_t kind, uint32_t version,
                    const uint8_t *segid, const void *body, size_t body_len) {
  size_t len = tern_frame_len(body_len);
  uint8_t *b = malloc(len);
  if (!b) return tern_fail(TERN_ENOMEM, "out of memory framing %zu bytes", body_len);
  if (body_len) memcpy(b + TERN_FRAME_HEADER_SIZE, body, body_len);
  tern_frame_close(b, kind, version, segid, body_len);
  *out = b;
  *out_len = len;
  return TERN_OK;
}

#define VERIFY_CHUNK (1u << 20)

int tern_frame_verify_file(tern_rfile *f, uint32_t kind, uint32_t max_version,
                           const uint8_t *segid, uint32_t *version) {
  const char *what = tern_rfile_path(f);
  uint64_t size = tern_rfile_size(f);
  uint8_t hdr[TERN_FRAME_HEADER_SIZE];
  const uint8_t *p;
  if (size < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE)
    return tern_fail(TERN_ECORRUPT, "%s: %llu bytes, too short for a tern file", what,
                     (unsigned long long)size);
  TERN_TRY(tern_rfile_read(f, 0, sizeof hdr, hdr, &p));
  TERN_TRY(tern_frame_check_header(p, (size_t)size, kind, max_version, segid, what, version));
  uint8_t *chunk = malloc(VERIFY_CHUNK);
  XXH3_state_t *st = XXH3_createState();
  if (!chunk || !st) {
    free(chunk);
    XXH3_freeState(st);
    return tern_fail(TERN_ENOMEM, "%s: out of memory", what);
  }
  XXH3_64bits_reset(st);
  uint64_t covered = size - TERN_FRAME_FOOTER_SIZE;
  int rc = TERN_OK;
  for (uint64_t off = 0; off < covered && rc == TERN_OK;) {
    size_t n = covered - off > VERIFY_CHUNK ? VERIFY_CHUNK : (size_t)(covered - off);
    rc = tern_rfile_read(f, off, n, chunk, &p);
    if (rc == TERN_OK) XXH3_64bits_update(st, p, n);
    off += n;
  }
  uint8_t foot[TERN_FRAME_FOOTER_SIZE];
  if (rc == TERN_OK) rc = tern_rfile_read(f, covered, sizeof foot, foot, &p);
  if (rc == TERN_OK) rc = check_footer(p, covered, XXH3_64bits_digest(st), what);
  free(chunk);
  XXH3_freeState(st);
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * livedocs_format.c — a live-docs generation to .liv bytes and back
 * (docs/FORMAT.md has the byte layout).
 *
 * The body is the set's own shape: a runs set is its list of runs; a
 * directory is either its chunk records, each in its in-memory form (so
 * loading copies payloads and builds no dense intermediate), or, when that
 * is smaller, a plain dense bitset.  Shape and records must be the
 * canonical ones the cost rules pick for the contents: then a set has one
 * encoding, rewriting is byte-identical, and no file can make a set bigger
 * in memory than its dense bitset.  Every field is checked against the end
 * of the body before it is read.
 */
#include "codec/livedocs_impl.h"

#include "codec/coding.h"
#include "codec/frame.h"
#include "codec/status.h"

#include <stdlib.h>

#define BODY_HEADER 16u
#define RECORD_HEADER 12u
#define LAYOUT_CHUNKS 0u
#define LAYOUT_DENSE 1u
#define LAYOUT_RUNS 2u
#define WHAT "livedocs (.liv)"

static size_t disk_payload(const ld_chunk *k) {
  switch (k->form) {
  case LD_ARRAY:
    return 2u * ((size_t)k->len + 1u) + (size_t)k->n * ld_arr_width(k->shift);
  case LD_BITMAP:
    return 8u * (size_t)k->len;
  case LD_RUNS:
    return 4u * (size_t)k->len;
  default:
    return 0;
  }
}

static uint8_t *put_record(uint8_t *p, uint32_t c, const ld_chunk *k) {
  tern_store32(p, c);
  p[4] = k->form;
  p[5] = k->shift;
  tern_store16(p + 6, k->len);
  tern_store32(p + 8, k->n);
  p += RECORD_HEADER;
  if (k->form == LD_ARRAY) {
    tern_store16s(p, ld_arr_index(k), (size_t)k->len + 1u);
    p += 2u * ((size_t)k->len + 1u);
    const uint8_t *e = ld_arr_entries(k);
    if (k->shift <= 8) {
      memcpy(p, e, k->n);
      return p + k->n;
    }
    tern_store16s(p, (const uint16_t *)(const void *)e, k->n); /* entries are u16-aligned */
    return p + 2u * (size_t)k->n;
  } else if (k->form == LD_BITMAP) {
    tern_store64s(p, k->p->data, k->len);
    return p + 8u * (size_t)k->len;
  } else if (k->form == LD_RUNS) {
    tern_store32s(p, (const uint32_t *)k->p->data, k->len);
    return p + 4u * (size_t)k->len;
  }
  return p;
}

static int put_dense(uint8_t *p, const tern_livedocs *ld) {
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS); /* one chunk at a time */
  if (!words) return tern_fail(TERN_ENOMEM, "livedocs_write: out of memory");
  memset(p, 0, 8u * (((size_t)ld->max_doc + 63u) / 64u));
  for (uint32_t c = 0; c < ld->nchunks; c++) {
    const ld_chunk *k = ld_slot(ld, c);
    if (!k) continue;
    memset(words, 0, 8u * LD_CHUNK_WORDS);
    tern_ld_chunk_to_words(k, words);
    uint32_t cnt = (ld_chunk_len(ld->max_doc, c) + 63u) / 64u;
    for (uint32_t i = 0; i < cnt; i++)
      tern_store64(p + 8u * ((size_t)c * LD_CHUNK_WORDS + i), words[i]);
  }
  free(words);
  return TERN_OK;
}

/* A body's first 16 bytes: max_doc, deleted, layout, a count. */
static uint8_t *put_body_header(uint8_t *p, const tern_livedocs *ld, uint8_t layout,
                                uint32_t count) {
  tern_store32(p, ld->max_doc);
  tern_store32(p + 4, ld->deleted);
  p[8] = layout;
  p[9] = p[10] = p[11] = 0;
  tern_store32(p + 12, count);
  return p + BODY_HEADER;
}

static void put_runs(uint8_t *p, const tern_livedocs *ld) {
  p = put_body_header(p, ld, LAYOUT_RUNS, ld->nruns);
  for (uint32_t i = 0; i < ld->nruns; i++) {
    tern_store32(p + 8u * i, ld->first[i]);
    tern_store32(p + 8u * i + 4u, ld->first[ld->nruns + i]);
  }
}

static size_t dense_len(const tern_livedocs *ld) {
  return BODY_HEADER + 8u * (((size_t)ld->max_doc + 63u) / 64u);
}

/* The body's bytes and its layout: a runs set its runs; a directory its
 * chunk records, or a dense bitset when that is smaller.  The reader
 * requires the layout this picks: each set has one encoding. */
static size_t layout_of(const tern_livedocs *ld, uint8_t *layout) {
  if (!ld->slots) {
    *layout = LAYOUT_RUNS;
    return BODY_HEADER + 8u * (size_t)ld->nruns;
  }
  size_t sparse = BODY_HEADER, dense = dense_len(ld);
  for (uint32_t c = 0; c < ld->nchunks; c++)
    if (ld_slot(ld, c)) sparse += RECORD_HEADER + disk_payload(&ld->slots[c]);
  *layout = dense < sparse ? LAYOUT_DENSE : LAYOUT_CHUNKS;
  return dense < sparse ? dense : sparse;
}

size_t tern_livedocs_encoded_len(const tern_livedocs *ld) {
  uint8_t layout;
  return tern_frame_len(layout_of(ld, &layout));
}

int tern_livedocs_encode(const tern_livedocs *ld, const uint8_t *segid, uint8_t *dst, size_t len) {
  if (!ld || !segid || !dst) return tern_fail(TERN_EINVAL, "livedocs_encode: NULL argument");
  uint8_t layout;
  size_t blen = layout_of(ld, &layout);
  if (len != tern_frame_len(blen))
    return tern_fail(TERN_EINVAL, "livedocs_encode: %zu bytes of room for %zu", len,
                     tern_frame_len(blen));
  uint8_t *body = dst + TERN_FRAME_HEADER_SIZE;
  if (layout == LAYOUT_RUNS) {
    put_runs(body, ld);
  } else if (layout == LAYOUT_DENSE) {
    put_body_header(body, ld, LAYOUT_DENSE, (uint32_t)((blen - BODY_HEADER) / 8u));
    TERN_TRY(put_dense(body + BODY_HEADER, ld));
  } else {
    uint8_t *p = put_body_header(body, ld, LAYOUT_CHUNKS, ld->nused);
    for (uint32_t c = 0; c < ld->nchunks; c++)
      if (ld_slot(ld, c)) p = put_record(p, c, &ld->slots[c]);
  }
  tern_frame_close(dst, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, segid, blen);
  return TERN_OK;
}

int tern_livedocs_write(const tern_livedocs *ld, const uint8_t *segid, uint8_t **out,
                        size_t *len) {
  if (!ld || !segid || !out || !len) return tern_fail(TERN_EINVAL, "livedocs_write: NULL argument");
  size_t n = tern_livedocs_encoded_len(ld);
  uint8_t *b = malloc(n);
  if (!b) return tern_fail(TERN_ENOMEM, "livedocs_write: out of memory for %zu bytes", n);
  int rc = tern_livedocs_encode(ld, segid, b, n);
  if (rc != TERN_OK) {
    free(b);
    return rc;
  }
  *out = b;
  *len = n;
  return TERN_OK;
}

/* --- reading --- */

static int bad(uint32_t c, const char *why) {
  return tern_fail(TERN_ECORRUPT, WHAT ": chunk %u: %s", c, why);
}

/* Checks an array record's index and entries; fills the profile. */
static int check_array(uint32_t c, const ld_chunk *k, const uint8_t *p, uint32_t clen,
                       uint16_t *occ, uint32_t *runs) {
  unsigned s = k->shift, w = ld_arr_width(s);
  if (s < LD_MIN_SHIFT || s > LD_MAX_SHIFT) return bad(c, "bad bucket shift");
  if (k->len != (clen + (1u << s) - 1u) >> s) return bad(c, "bucket count differs from the chunk's");
  if (tern_load16(p) != 0 || tern_load16(p + 2u * k->len) != k->n)
    return bad(c, "bucket index does not span the entries");
  const uint8_t *e = p + 2u * ((size_t)k->len + 1u);
  uint32_t prev = 0, have = 0;
  *runs = 0;
  for (uint32_t b = 0; b < k->len; b++) {
    uint32_t lo = tern_load16(p + 2u * b), hi = tern_load16(p + 2u * b + 2u);
    if (lo > hi || hi > k->n) return bad(c, "bucket index not increasing");
    for (uint32_t i = lo; i < hi; i++) {
      uint32_t off = w == 1 ? (((b << s) & 0xff00u) | e[i]) : tern_load16(e + 2u * i);
      if ((off >> s) != b || off >= clen) return bad(c, "entry outside its bucket");
      if (have && off <= prev) return bad(c, "entries not increasing");
      *runs += !have || off != prev + 1u;
      occ[off >> 6]++;
      prev = off;
      have = 1;
    }
  }
  return TERN_OK;
}

static int check_bitmap(uint32_t c, const ld_chunk *k, const uint8_t *p, uint32_t clen,
                        uint16_t *occ, uint32_t *runs) {
  if (k->shift != 0 || k->len != (clen + 63u) / 64u) return bad(c, "bitmap size differs from the chunk's");
  uint32_t n = 0;
  uint64_t carry = 0;
  *runs = 0;
  for (uint32_t i = 0; i < k->len; i++) {
    uint64_t w = tern_load64(p + 8u * i);
    if (i + 1u == k->len && (w & ~ld_tail_mask(clen))) return bad(c, "bits past the last doc");
    n += occ[i] = (uint16_t)ld_popcount(w);
    *runs += ld_popcount(w & ~((w << 1) | carry));
    carry = w >> 63;
  }
  return n == k->n ? TERN_OK : bad(c, "bitmap count differs from the record's");
}

static int check_runs(uint32_t c, const ld_chunk *k, const uint8_t *p, uint32_t clen,
                      uint16_t *occ, uint32_t *runs) {
  if (k->shift != 0 || k->len == 0) return bad(c, "bad run record");
  uint64_t n = 0;
  uint32_t next = 0; /* the least start the next run may have */
  for (uint32_t i = 0; i < k->len; i++) {
    uint32_t v = tern_load32(p + 4u * i), first = v >> 16, last = v & 0xffffu;
    if (first < next || last < first || last >= clen) return bad(c, "runs overlap, touch or exceed the chunk");
    n += last - first + 1u;
    for (uint32_t d = first; d <= last;) { /* per word, not per doc */
      uint32_t end = (d | 63u) < last ? (d | 63u) : last;
      occ[d >> 6] = (uint16_t)(occ[d >> 6] + (end - d + 1u));
      d = end + 1u;
    }
    next = last + 2u;
  }
  *runs = k->len;
  return n == k->n ? TERN_OK : bad(c, "run lengths differ from the record's count");
}

/* Copies a checked record's payload into k->p (native layout). */
static void load_payload(ld_chunk *k, const uint8_t *p) {
  uint8_t *d = (uint8_t *)k->p->data;
  if (k->form == LD_ARRAY) {
    size_t eb = ld_arr_entry_bytes(k->n, k->shift), total = tern_ld_payload_bytes(k->form, k->shift, k->len, k->n);
    memset(d, 0, total);
    uint16_t *index = (uint16_t *)(d + eb);
    for (uint32_t b = 0; b <= k->len; b++) index[b] = tern_load16(p + 2u * b);
    const uint8_t *e = p + 2u * ((size_t)k->len + 1u);
    if (k->shift <= 8) {
      memcpy(d, e, k->n);
    } else {
      for (uint32_t i = 0; i < k->n; i++) memcpy(d + 2u * i, &(uint16_t){tern_load16(e + 2u * i)}, 2);
    }
  } else if (k->form == LD_BITMAP) {
    for (uint32_t i = 0; i < k->len; i++) k->p->data[i] = tern_load64(p + 8u * i);
  } else if (k->form == LD_RUNS) {
    uint32_t *runs = (uint32_t *)d;
    for (uint32_t i = 0; i < k->len; i++) runs[i] = tern_load32(p + 4u * i);
  }
}

/* Reads and checks one record at *pp; pushes it. */
static int read_record(tern_livedocs *ld, const uint8_t **pp, const uint8_t *end, uint32_t *next_c,
                       uint16_t *occ) {
  const uint8_t *p = *pp;
  if ((size_t)(end - p) < RECORD_HEADER) return tern_fail(TERN_ECORRUPT, WHAT ": truncated record");
  uint32_t c = tern_load32(p);
  ld_chunk k = {.form = p[4], .shift = p[5], .len = tern_load16(p + 6), .n = tern_load32(p + 8)};
  if (c < *next_c || c >= ld->nchunks) return bad(c, "chunk out of order or past max_doc");
  uint32_t clen = ld_chunk_len(ld->max_doc, c);
  if (k.n == 0 || k.n > clen) return bad(c, "deleted count out of range");
  if (k.form < LD_ARRAY || k.form > LD_FULL) return bad(c, "unknown form");
  size_t need = k.form == LD_ARRAY
                    ? 2u * ((size_t)k.len + 1u) + (size_t)k.n * ld_arr_width(k.shift)
                    : disk_payload(&k);
  p += RECORD_HEADER;
  if ((size_t)(end - p) < need) return bad(c, "payload truncated");
  memset(occ, 0, 2u * LD_CHUNK_WORDS);
  uint32_t runs = 0;
  if (k.form == LD_ARRAY)
    TERN_TRY(check_array(c, &k, p, clen, occ, &runs));
  else if (k.form == LD_BITMAP)
    TERN_TRY(check_bitmap(c, &k, p, clen, occ, &runs));
  else if (k.form == LD_RUNS)
    TERN_TRY(check_runs(c, &k, p, clen, occ, &runs));
  else if (k.shift != 0 || k.len != 0 || k.n != clen)
    return bad(c, "bad full-chunk record");
  ld_chunk want;
  tern_ld_chunk_choose_profile(&want, occ, k.n, runs, clen);
  if (want.form != k.form || want.shift != k.shift || want.len != k.len)
    return bad(c, "not in the form the cost rule picks");
  if (k.form != LD_FULL) {
    size_t bytes = tern_ld_payload_bytes(k.form, k.shift, k.len, k.n);
    if (!(k.p = tern_ld_payload_new(bytes)))
      return tern_fail(TERN_ENOMEM, WHAT ": out of memory for chunk %u", c);
    load_payload(&k, p);
  }
  tern_ld_push(ld, c, &k);
  *pp = p + need;
  *next_c = c + 1u;
  return TERN_OK;
}

static int read_chunks(tern_livedocs *ld, uint32_t count, const uint8_t *p, const uint8_t *end) {
  uint16_t *occ = malloc(2u * LD_CHUNK_WORDS);
  if (!occ) return tern_fail(TERN_ENOMEM, WHAT ": out of memory");
  uint32_t next_c = 0;
  int rc = TERN_OK;
  for (uint32_t i = 0; rc == TERN_OK && i < count; i++) rc = read_record(ld, &p, end, &next_c, occ);
  free(occ);
  if (rc == TERN_OK && p != end)
    rc = tern_fail(TERN_ECORRUPT, WHAT ": %zu bytes after the last record", (size_t)(end - p));
  return rc;
}

static int read_dense(tern_livedocs *ld, const uint8_t *p) {
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS); /* one chunk's slice, not the segment */
  if (!words) return tern_fail(TERN_ENOMEM, WHAT ": out of memory");
  int rc = TERN_OK;
  for (uint32_t c = 0; rc == TERN_OK && c < ld->nchunks; c++) {
    uint32_t clen = ld_chunk_len(ld->max_doc, c), cnt = (clen + 63u) / 64u;
    uint64_t any = 0;
    for (uint32_t i = 0; i < cnt; i++)
      any |= words[i] = tern_load64(p + 8u * ((size_t)c * LD_CHUNK_WORDS + i));
    if (words[cnt - 1] & ~ld_tail_mask(clen)) {
      rc = tern_fail(TERN_ECORRUPT, WHAT ": dense bits past max_doc");
    } else if (any) {
      ld_chunk k;
      tern_ld_chunk_choose(&k, words, clen);
      rc = tern_ld_chunk_build(&k, words, clen);
      if (rc == TERN_OK) tern_ld_push(ld, c, &k);
    }
  }
  free(words);
  return rc;
}

/* A runs set from nruns checked (first, last) pairs; canonical only when
 * the cost rule would keep these docs as a runs set. */
static int read_runs(tern_livedocs **out, uint32_t max_doc, uint32_t nruns, const uint8_t *p) {
  tern_livedocs *rs;
  TERN_TRY(tern_ld_alloc_runs(&rs, max_doc, nruns));
  uint32_t *first = (uint32_t *)(uintptr_t)rs->first, *last = first + nruns;
  uint64_t n = 0;
  int rc = TERN_OK;
  for (uint32_t i = 0; rc == TERN_OK && i < nruns; i++) {
    first[i] = tern_load32(p + 8u * i);
    last[i] = tern_load32(p + 8u * i + 4u);
    if (first[i] > last[i] || last[i] >= max_doc || (i && first[i] <= (uint64_t)last[i - 1] + 1u))
      rc = tern_fail(TERN_ECORRUPT, WHAT ": run %u overlaps, touches the one before or passes max_doc", i);
    n += (uint64_t)last[i] - first[i] + 1u;
  }
  rs->deleted = (uint32_t)n;
  if (rc == TERN_OK && !tern_ld_runs_are_cheaper(max_doc, first, last, nruns))
    rc = tern_fail(TERN_ECORRUPT, WHAT ": %u runs stored as a runs set, not the shape the cost rule picks", nruns);
  if (rc != TERN_OK) {
    tern_livedocs_free(rs);
    return rc;
  }
  *out = rs;
  return TERN_OK;
}

/* Slots a body declares, bounded by what it can hold (for the allocation). */
static int body_slots(const uint8_t *body, size_t body_len, uint32_t nchunks, uint32_t *nslots) {
  uint32_t layout = body[8], count = tern_load32(body + 12);
  if (body[9] | body[10] | body[11]) return tern_fail(TERN_ECORRUPT, WHAT ": reserved bytes set");
  if (layout == LAYOUT_DENSE) {
    uint64_t nw = ((uint64_t)tern_load32(body) + 63u) / 64u;
    if (count != nw || body_len - BODY_HEADER != 8u * nw)
      return tern_fail(TERN_ECORRUPT, WHAT ": dense body of %zu bytes for %u words", body_len, count);
    *nslots = 0;
    return TERN_OK;
  }
  if (layout == LAYOUT_RUNS) {
    if (count > LD_SET_RUNS_MAX || body_len - BODY_HEADER != 8u * (size_t)count)
      return tern_fail(TERN_ECORRUPT, WHAT ": runs body of %zu bytes for %u runs", body_len, count);
    *nslots = count;
    return TERN_OK;
  }
  if (layout != LAYOUT_CHUNKS) return tern_fail(TERN_ECORRUPT, WHAT ": unknown layout %u", layout);
  if (count > nchunks || (uint64_t)count * RECORD_HEADER > body_len - BODY_HEADER)
    return tern_fail(TERN_ECORRUPT, WHAT ": %u chunk records do not fit", count);
  *nslots = count;
  return TERN_OK;
}

int tern_livedocs_read(tern_livedocs **out, const uint8_t *buf, size_t len, const uint8_t *segid,
                       uint32_t max_doc, uint32_t expected_deleted) {
  if (!out || !buf || !segid || max_doc == UINT32_MAX)
    return tern_fail(TERN_EINVAL, "livedocs_read: bad argument");
  const uint8_t *body;
  size_t body_len;
  TERN_TRY(tern_frame_open_buffer(buf, len, TERN_KIND_LIVEDOCS, TERN_LIVEDOCS_VERSION, segid, WHAT,
                                  NULL, &body, &body_len));
  if (body_len < BODY_HEADER) return tern_fail(TERN_ECORRUPT, WHAT ": body of %zu bytes", body_len);
  if (tern_load32(body) != max_doc)
    return tern_fail(TERN_ECORRUPT, WHAT ": max_doc %u, the catalog says %u", tern_load32(body),
                     max_doc);
  if (tern_load32(body + 4) != expected_deleted)
    return tern_fail(TERN_ECORRUPT, WHAT ": %u deleted, the catalog says %u", tern_load32(body + 4),
                     expected_deleted);
  uint32_t nslots = 0;
  TERN_TRY(body_slots(body, body_len, ld_nchunks(max_doc), &nslots));
  tern_livedocs *ld;
  int rc;
  if (body[8] == LAYOUT_RUNS) {
    TERN_TRY(read_runs(&ld, max_doc, nslots, body + BODY_HEADER));
    rc = TERN_OK;
  } else {
    TERN_TRY(tern_ld_alloc(&ld, max_doc));
    const uint8_t *end = body + body_len;
    rc = body[8] == LAYOUT_DENSE ? read_dense(ld, body + BODY_HEADER)
                                 : read_chunks(ld, nslots, body + BODY_HEADER, end);
    if (rc == TERN_OK && tern_ld_runs_cheaper(ld))
      rc = tern_fail(TERN_ECORRUPT, WHAT ": chunks stored for a set the cost rule keeps as runs");
    uint8_t layout = body[8];
    if (rc == TERN_OK) (void)layout_of(ld, &layout); /* the one the writer picks */
    if (rc == TERN_OK && layout != body[8])
      rc = tern_fail(TERN_ECORRUPT, WHAT ": a %s body where the writer makes a %s one",
                     body[8] == LAYOUT_DENSE ? "dense" : "chunks",
                     layout == LAYOUT_DENSE ? "dense" : "chunks");
  }
  if (rc == TERN_OK && ld->deleted != expected_deleted)
    rc = tern_fail(TERN_ECORRUPT, WHAT ": %s hold %u deleted, the header says %u",
                   ld->slots ? "chunks" : "runs", ld->deleted, expected_deleted);
  if (rc != TERN_OK) {
    tern_livedocs_free(ld);
    return rc;
  }
  *out = ld;
  return TERN_OK;
}

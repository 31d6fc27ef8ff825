/* SPDX-License-Identifier: MIT */
/*
 * catalog_schema.c — the catalog's records (catalog_schema.h,
 * docs/FORMAT.md): which fields, in which order, and which values are
 * valid.  The bytes go through the codec's generic record coder
 * (codec/record.h).  Encoders trust their input (the engine has validated
 * it); decoders trust nothing.
 */
#include "engine/format/catalog_schema.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t k_format_magic[4] = {'t', 'e', 'r', 'n'};

typedef tern_rec_reader rd;
typedef tern_rec_writer wr;

static size_t written(const wr *w, const uint8_t *start) { return (size_t)(w->p - start); }

/* ------------------------------------------------------------- format */

void tern_rec_format_encode(uint8_t out[TERN_REC_FORMAT_SIZE]) {
  wr w = {out};
  tern_rec_put_bytes(&w, k_format_magic, 4);
  tern_rec_put_u32(&w, TERN_CATALOG_VERSION);
}

int tern_rec_format_decode(const uint8_t *buf, size_t len, uint32_t *version) {
  rd r = tern_rec_reader_of(buf, len, "catalog format");
  const uint8_t *magic;
  *version = 0;
  if (tern_rec_get_bytes(&r, 4, &magic) != TERN_OK || memcmp(magic, k_format_magic, 4) != 0 ||
      tern_rec_get_u32(&r, version) != TERN_OK)
    return tern_fail(TERN_ECORRUPT, "catalog format record: not a tern catalog");
  if (*version == 0) return tern_fail(TERN_ECORRUPT, "catalog format record: version 0");
  if (*version < TERN_CATALOG_VERSION_MIN || *version > TERN_CATALOG_VERSION)
    return tern_fail(TERN_EVERSION, "catalog format version %u; this library reads %u to %u",
                     *version, TERN_CATALOG_VERSION_MIN, TERN_CATALOG_VERSION);
  size_t plen;
  TERN_TRY(tern_rec_unseal("format", 6, buf, len, &plen, "catalog format"));
  if (plen != TERN_REC_FORMAT_SIZE)
    return tern_fail(TERN_ECORRUPT, "catalog format record: %zu bytes", plen);
  return TERN_OK;
}

/* ------------------------------------------------------------- options */

int tern_rec_options_encode(const tern_options *o, uint8_t **out, size_t *len) {
  size_t cap = 6 * TERN_REC_VARINT_MAX;
  for (size_t i = 0; i < o->nfields; i++)
    cap += 1 + strlen(o->fields[i].field) + TERN_REC_VARINT_MAX;
  uint8_t *b = malloc(cap);
  if (!b) return tern_fail(TERN_ENOMEM, "options record: out of memory");
  wr w = {b};
  tern_rec_put_varint(&w, o->pulsing_threshold);
  tern_rec_put_varint(&w, o->inline_value_max);
  tern_rec_put_varint(&w, o->bloom_bits_per_key);
  tern_rec_put_varint(&w, o->write_buffer_bytes);
  tern_rec_put_varint(&w, o->map_size);
  tern_rec_put_varint(&w, o->nfields);
  for (size_t i = 0; i < o->nfields; i++) {
    size_t n = strlen(o->fields[i].field);
    tern_rec_put_u8(&w, (uint8_t)n);
    tern_rec_put_bytes(&w, o->fields[i].field, n);
    tern_rec_put_varint(&w, o->fields[i].threshold);
  }
  *out = b;
  *len = written(&w, b);
  return TERN_OK;
}

/* A field name: u8 length, 1 to 255 bytes, no NUL (C strings in tern.h). */
static int get_name(rd *r, const uint8_t **name, size_t *len) {
  const uint8_t *n = NULL;
  *name = NULL;
  *len = 0;
  TERN_TRY(tern_rec_get_bytes(r, 1, &n));
  TERN_TRY(tern_rec_get_bytes(r, (*len = n[0]), name));
  if (*len == 0 || memchr(*name, 0, *len))
    return tern_fail(TERN_ECORRUPT, "%s record: bad field name", r->what);
  return TERN_OK;
}

int tern_rec_options_decode(tern_rec_options *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog options");
  memset(out, 0, sizeof *out);
  uint64_t nfields;
  TERN_TRY(tern_rec_get_varint32(&r, &out->pulsing_threshold));
  TERN_TRY(tern_rec_get_varint32(&r, &out->inline_value_max));
  TERN_TRY(tern_rec_get_varint32(&r, &out->bloom_bits_per_key));
  TERN_TRY(tern_rec_get_varint(&r, &out->write_buffer_bytes));
  TERN_TRY(tern_rec_get_varint(&r, &out->map_size));
  TERN_TRY(tern_rec_get_varint(&r, &nfields));
  /* Each field takes at least 3 bytes: bounds the allocation by the input. */
  if (nfields > len / 3) return tern_fail(TERN_ECORRUPT, "catalog options record: bad field count");
  if (nfields) {
    out->fields = calloc((size_t)nfields, sizeof *out->fields);
    if (!out->fields) return tern_fail(TERN_ENOMEM, "options record: out of memory");
  }
  out->nfields = (size_t)nfields;
  for (size_t i = 0; i < out->nfields; i++) {
    tern_rec_field *f = &out->fields[i];
    int rc = get_name(&r, &f->name, &f->name_len);
    if (rc == TERN_OK) rc = tern_rec_get_varint32(&r, &f->threshold);
    if (rc != TERN_OK) {
      tern_rec_options_free(out);
      return rc;
    }
  }
  int rc = tern_rec_get_done(&r);
  if (rc != TERN_OK) tern_rec_options_free(out);
  return rc;
}

void tern_rec_options_free(tern_rec_options *o) {
  free(o->fields);
  o->fields = NULL;
  o->nfields = 0;
}

/* ------------------------------------------------------------- state */

size_t tern_rec_state_encode(uint8_t out[TERN_REC_STATE_MAX], const tern_rec_state *s) {
  wr w = {out};
  tern_rec_put_varint(&w, s->seq);
  tern_rec_put_varint(&w, s->next_segment);
  tern_rec_put_varint(&w, s->buffered_docs);
  tern_rec_put_varint(&w, s->buffered_bytes);
  tern_rec_put_varint(&w, s->nsegments);
  tern_rec_put_u64(&w, s->seg_digest);
  return written(&w, out);
}

int tern_rec_state_decode(tern_rec_state *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog state");
  *out = (tern_rec_state){0};
  TERN_TRY(tern_rec_get_varint(&r, &out->seq));
  TERN_TRY(tern_rec_get_varint(&r, &out->next_segment));
  TERN_TRY(tern_rec_get_varint(&r, &out->buffered_docs));
  TERN_TRY(tern_rec_get_varint(&r, &out->buffered_bytes));
  TERN_TRY(tern_rec_get_varint(&r, &out->nsegments));
  TERN_TRY(tern_rec_get_u64(&r, &out->seg_digest));
  return tern_rec_get_done(&r);
}

size_t tern_rec_state4_encode(uint8_t out[TERN_REC_STATE_MAX], const tern_rec_state *s) {
  wr w = {out};
  tern_rec_put_varint(&w, s->seq_base);
  tern_rec_put_varint(&w, s->next_segment);
  tern_rec_put_varint(&w, s->buffer_gen);
  tern_rec_put_varint(&w, s->old_docs);
  tern_rec_put_varint(&w, s->nsegments);
  tern_rec_put_u64(&w, s->seg_digest);
  return written(&w, out);
}

int tern_rec_state4_decode(tern_rec_state *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog state");
  *out = (tern_rec_state){0};
  TERN_TRY(tern_rec_get_varint(&r, &out->seq_base));
  TERN_TRY(tern_rec_get_varint(&r, &out->next_segment));
  TERN_TRY(tern_rec_get_varint(&r, &out->buffer_gen));
  TERN_TRY(tern_rec_get_varint(&r, &out->old_docs));
  TERN_TRY(tern_rec_get_varint(&r, &out->nsegments));
  TERN_TRY(tern_rec_get_u64(&r, &out->seg_digest));
  return tern_rec_get_done(&r);
}

/* ------------------------------------------------------------- health */

size_t tern_rec_health_encode(uint8_t out[TERN_REC_HEALTH_MAX], const tern_rec_health *h) {
  wr w = {out};
  size_t mlen = strnlen(h->msg, TERN_REC_HEALTH_MSG_MAX);
  size_t nbad = h->nbad < TERN_REC_HEALTH_BAD_MAX ? h->nbad : TERN_REC_HEALTH_BAD_MAX;
  tern_rec_put_varint(&w, (uint64_t)(h->status < 0 ? -(int64_t)h->status : 0));
  tern_rec_put_varint(&w, h->seq);
  tern_rec_put_varint(&w, nbad);
  for (size_t i = 0; i < nbad; i++)
    tern_rec_put_varint(&w, h->bad[i]);
  tern_rec_put_varint(&w, mlen);
  tern_rec_put_bytes(&w, h->msg, mlen);
  return written(&w, out);
}

int tern_rec_health_decode(tern_rec_health *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog health");
  uint64_t status, nbad, mlen;
  const uint8_t *m = NULL;
  memset(out, 0, sizeof *out);
  TERN_TRY(tern_rec_get_varint(&r, &status));
  TERN_TRY(tern_rec_get_varint(&r, &out->seq));
  TERN_TRY(tern_rec_get_varint(&r, &nbad));
  if (status > 0x7fffffff || nbad > TERN_REC_HEALTH_BAD_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog health record: status or count out of range");
  out->status = -(int)status;
  out->nbad = (size_t)nbad;
  for (size_t i = 0; i < out->nbad; i++)
    TERN_TRY(tern_rec_get_varint(&r, &out->bad[i]));
  TERN_TRY(tern_rec_get_varint(&r, &mlen));
  if (mlen > TERN_REC_HEALTH_MSG_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog health record: message of %llu bytes",
                     (unsigned long long)mlen);
  TERN_TRY(tern_rec_get_bytes(&r, (size_t)mlen, &m));
  memcpy(out->msg, m, (size_t)mlen);
  out->msg[mlen] = 0;
  return tern_rec_get_done(&r);
}

/* ------------------------------------------------------------- segments */

void tern_rec_segkey_encode(uint8_t out[TERN_REC_SEGKEY_SIZE], uint64_t number) {
  tern_rec_be64_encode(out, number);
}

int tern_rec_segkey_decode(const uint8_t *buf, size_t len, uint64_t *number) {
  return tern_rec_be64_decode(buf, len, number, "catalog segment key");
}

size_t tern_rec_segment_encode(uint8_t out[TERN_REC_SEGMENT_MAX], const tern_rec_segment *s) {
  wr w = {out};
  tern_rec_put_bytes(&w, s->segid, TERN_SEGID_SIZE);
  tern_rec_put_varint(&w, s->max_doc);
  tern_rec_put_varint(&w, s->deleted);
  tern_rec_put_varint(&w, s->livedocs_gen);
  return written(&w, out);
}

int tern_rec_segment_decode(tern_rec_segment *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog segment");
  const uint8_t *id = NULL;
  TERN_TRY(tern_rec_get_bytes(&r, TERN_SEGID_SIZE, &id));
  memcpy(out->segid, id, TERN_SEGID_SIZE);
  TERN_TRY(tern_rec_get_varint(&r, &out->max_doc));
  TERN_TRY(tern_rec_get_varint(&r, &out->deleted));
  TERN_TRY(tern_rec_get_varint(&r, &out->livedocs_gen));
  TERN_TRY(tern_rec_get_done(&r));
  if (out->max_doc == 0 || out->max_doc >= UINT32_MAX || out->deleted > out->max_doc)
    return tern_fail(TERN_ECORRUPT, "catalog segment record: max_doc %llu, deleted %llu",
                     (unsigned long long)out->max_doc, (unsigned long long)out->deleted);
  if ((out->deleted > 0) != (out->livedocs_gen > 0))
    return tern_fail(TERN_ECORRUPT, "catalog segment record: deleted %llu with generation %llu",
                     (unsigned long long)out->deleted, (unsigned long long)out->livedocs_gen);
  return TERN_OK;
}

/* ------------------------------------------------------------- documents */

size_t tern_rec_doc_size(size_t vlen, const tern_term *terms, size_t nterms) {
  size_t n = tern_rec_varint_size(vlen) + vlen + tern_rec_varint_size(nterms);
  for (size_t i = 0; i < nterms; i++)
    n += 1 + strlen(terms[i].field) + tern_rec_varint_size(terms[i].len) + terms[i].len;
  return n;
}

size_t tern_rec_doc_encode(uint8_t *out, const void *val, size_t vlen, const tern_term *terms,
                           size_t nterms) {
  wr w = {out};
  tern_rec_put_varint(&w, vlen);
  tern_rec_put_bytes(&w, val, vlen);
  tern_rec_put_varint(&w, nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = strlen(terms[i].field);
    tern_rec_put_u8(&w, (uint8_t)fl);
    tern_rec_put_bytes(&w, terms[i].field, fl);
    tern_rec_put_varint(&w, terms[i].len);
    tern_rec_put_bytes(&w, terms[i].term, terms[i].len);
  }
  return written(&w, out);
}

static int decode_value(rd *r, const uint8_t **val, size_t *vlen) {
  uint64_t n;
  *val = NULL;
  *vlen = 0;
  TERN_TRY(tern_rec_get_varint(r, &n));
  if (n > TERN_VALUE_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog document record: value of %llu bytes",
                     (unsigned long long)n);
  *vlen = (size_t)n;
  return tern_rec_get_bytes(r, (size_t)n, val);
}

int tern_rec_doc_value(const uint8_t *buf, size_t len, const uint8_t **val, size_t *vlen) {
  rd r = tern_rec_reader_of(buf, len, "catalog document");
  return decode_value(&r, val, vlen);
}

static int decode_term(rd *r, tern_rec_term *t) {
  uint64_t tl;
  TERN_TRY(get_name(r, &t->field, &t->flen));
  TERN_TRY(tern_rec_get_varint(r, &tl));
  if (tl == 0 || tl > TERN_KEY_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog document record: bad field or term length");
  t->tlen = (size_t)tl;
  return tern_rec_get_bytes(r, t->tlen, &t->term);
}

int tern_rec_doc_decode(tern_rec_doc *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog document");
  TERN_TRY(decode_value(&r, &out->val, &out->vlen));
  TERN_TRY(tern_rec_get_varint(&r, &out->nterms));
  out->terms = r.p;
  out->end = r.end;
  if (out->nterms > len) return tern_fail(TERN_ECORRUPT, "catalog document record: bad term count");
  for (uint64_t i = 0; i < out->nterms; i++) {
    tern_rec_term t;
    TERN_TRY(decode_term(&r, &t));
  }
  return tern_rec_get_done(&r);
}

int tern_rec_doc_decode_checked(tern_rec_doc *out, const uint8_t *buf, size_t len) {
  rd r = tern_rec_reader_of(buf, len, "catalog document");
  TERN_TRY(decode_value(&r, &out->val, &out->vlen));
  TERN_TRY(tern_rec_get_varint(&r, &out->nterms));
  out->terms = r.p;
  out->end = r.end;
  return TERN_OK;
}

void tern_rec_terms_init(tern_rec_terms *it, const tern_rec_doc *d) {
  it->p = d->terms;
  it->end = d->end;
  it->left = d->nterms;
}

int tern_rec_terms_next(tern_rec_terms *it, tern_rec_term *t) {
  if (it->left == 0) return 0;
  rd r = {it->p, it->end, "catalog document"};
  TERN_TRY(decode_term(&r, t));
  it->p = r.p;
  it->left--;
  return 1;
}

/* ------------------------------------------------------------- buffer entries */

size_t tern_rec_bufkey(uint8_t out[TERN_REC_BUFKEY_MAX], const void *key, size_t klen) {
  wr w = {out};
  if (klen <= TERN_REC_BUFKEY_PLAIN) {
    tern_rec_put_bytes(&w, key, klen);
    return klen;
  }
  tern_rec_put_bytes(&w, key, TERN_REC_BUFKEY_PREFIX);
  tern_rec_hash128(w.p, key, klen);
  w.p += 16;
  tern_rec_put_u8(&w, 0x01);
  return written(&w, out);
}

void tern_rec_genkey(uint8_t out[TERN_REC_GENKEY_PREFIX], uint64_t gen) {
  out[0] = 0x00;
  for (int i = 0; i < 8; i++)
    out[1 + i] = (uint8_t)(gen >> (56 - 8 * i));
}

size_t tern_rec_mainbufkey(uint8_t out[TERN_REC_MAINBUFKEY_MAX], uint64_t gen, const void *key,
                           size_t klen) {
  tern_rec_genkey(out, gen);
  return TERN_REC_GENKEY_PREFIX + tern_rec_bufkey(out + TERN_REC_GENKEY_PREFIX, key, klen);
}

int tern_rec_genkey_decode(const uint8_t *k, size_t n, uint64_t *gen) {
  if (n <= TERN_REC_GENKEY_PREFIX || k[0] != 0x00) return 0;
  uint64_t g = 0;
  for (int i = 0; i < 8; i++)
    g = g << 8 | k[1 + i];
  *gen = g;
  return 1;
}

static size_t key_tail(size_t klen) {
  return klen <= TERN_REC_BUFKEY_PLAIN ? 0 : klen - TERN_REC_BUFKEY_PREFIX;
}

size_t tern_rec_bufval_size(size_t klen, size_t dlen) {
  size_t tail = key_tail(klen);
  return tern_rec_varint_size(tail) + tail + dlen;
}

void tern_rec_bufval_encode(uint8_t *out, const void *key, size_t klen, const uint8_t *doc,
                            size_t dlen) {
  wr w = {out};
  size_t tail = key_tail(klen);
  tern_rec_put_varint(&w, tail);
  tern_rec_put_bytes(&w, (const uint8_t *)key + TERN_REC_BUFKEY_PREFIX * (tail != 0), tail);
  tern_rec_put_bytes(&w, doc, dlen);
}

/* The long key whose first TERN_REC_BUFKEY_PREFIX bytes and hash are its
 * LMDB key lkey, the rest (tail) from the value. */
static int long_key(rd *r, const uint8_t *lkey, size_t lklen, uint64_t tail, uint8_t *key,
                    size_t *klen) {
  const uint8_t *t = NULL;
  if (tail + TERN_REC_BUFKEY_PREFIX <= TERN_REC_BUFKEY_PLAIN ||
      tail + TERN_REC_BUFKEY_PREFIX > TERN_KEY_MAX || lkey[lklen - 1] != 0x01)
    return tern_fail(TERN_ECORRUPT, "catalog buffer entry: bad long key");
  TERN_TRY(tern_rec_get_bytes(r, (size_t)tail, &t));
  memcpy(key, lkey, TERN_REC_BUFKEY_PREFIX);
  memcpy(key + TERN_REC_BUFKEY_PREFIX, t, (size_t)tail);
  *klen = TERN_REC_BUFKEY_PREFIX + (size_t)tail;
  uint8_t h[16];
  tern_rec_hash128(h, key, *klen);
  if (memcmp(h, lkey + TERN_REC_BUFKEY_PREFIX, 16) != 0)
    return tern_fail(TERN_ECORRUPT, "catalog buffer entry: long key hash mismatch");
  return TERN_OK;
}

int tern_rec_bufval_decode(const uint8_t *lkey, size_t lklen, const uint8_t *val, size_t vlen,
                           uint8_t *key, size_t *klen, const uint8_t **doc, size_t *dlen) {
  rd r = tern_rec_reader_of(val, vlen, "catalog buffer entry");
  uint64_t tail;
  TERN_TRY(tern_rec_get_varint(&r, &tail));
  if (lklen == 0 || lklen > TERN_REC_BUFKEY_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog buffer entry: key of %zu bytes", lklen);
  if (lklen <= TERN_REC_BUFKEY_PLAIN) {
    if (tail != 0) return tern_fail(TERN_ECORRUPT, "catalog buffer entry: tail on a plain key");
    memcpy(key, lkey, lklen);
    *klen = lklen;
  } else {
    TERN_TRY(long_key(&r, lkey, lklen, tail, key, klen));
  }
  *doc = r.p;
  *dlen = tern_rec_left(&r);
  return TERN_OK;
}

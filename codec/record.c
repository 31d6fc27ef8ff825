/*
 * record.c — encoding and decoding of the catalog's records (record.h,
 * docs/FORMAT.md).  Encoders trust their input (the engine has
 * validated it); decoders trust nothing.
 */
#include "codec/record.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static const uint8_t k_format_magic[4] = {'t', 'e', 'r', 'n'};

/* A bounded reader over one record; `what` names it in messages.  Every
 * rd_ call defines its output on failure too (0 or NULL): the compiler
 * cannot see that tern_fail() returns a negative status, and a caller that
 * ignored a failure would read a defined value, not stack garbage. */
typedef struct rd {
  const uint8_t *p, *end;
  const char *what;
} rd;

static int rd_varint(rd *r, uint64_t *v) {
  *v = 0;
  if (tern_get_varint(&r->p, r->end, v) < 0)
    return tern_fail(TERN_ECORRUPT, "catalog %s record: truncated or bad varint", r->what);
  return TERN_OK;
}

static int rd_varint32(rd *r, uint32_t *v) {
  uint64_t x;
  *v = 0;
  TERN_TRY(rd_varint(r, &x));
  if (x > UINT32_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog %s record: value %llu too large", r->what,
                     (unsigned long long)x);
  *v = (uint32_t)x;
  return TERN_OK;
}

static int rd_bytes(rd *r, size_t n, const uint8_t **out) {
  *out = NULL;
  if ((size_t)(r->end - r->p) < n)
    return tern_fail(TERN_ECORRUPT, "catalog %s record: truncated (%zu bytes wanted)", r->what, n);
  *out = r->p;
  r->p += n;
  return TERN_OK;
}

static int rd_done(const rd *r) {
  if (r->p != r->end)
    return tern_fail(TERN_ECORRUPT, "catalog %s record: %zu trailing bytes", r->what,
                     (size_t)(r->end - r->p));
  return TERN_OK;
}

/* ------------------------------------------------------------- seals */

uint64_t tern_rec_seal_of(const void *key, size_t klen, const uint8_t *payload, size_t plen) {
  return XXH3_64bits_withSeed(payload, plen, XXH3_64bits(key, klen));
}

void tern_rec_seal(const void *key, size_t klen, uint8_t *payload, size_t plen) {
  tern_store64(payload + plen, tern_rec_seal_of(key, klen, payload, plen));
}

uint64_t tern_rec_stored_seal(const uint8_t *val, size_t vlen) {
  return vlen >= TERN_REC_SEAL_SIZE ? tern_load64(val + vlen - TERN_REC_SEAL_SIZE) : 0;
}

int tern_rec_unseal(const void *key, size_t klen, const uint8_t *val, size_t vlen, size_t *plen,
                    const char *what) {
  if (vlen < TERN_REC_SEAL_SIZE)
    return tern_fail(TERN_ECORRUPT, "catalog %s record: %zu bytes, no room for its checksum", what,
                     vlen);
  size_t n = vlen - TERN_REC_SEAL_SIZE;
  if (tern_load64(val + n) != tern_rec_seal_of(key, klen, val, n))
    return tern_fail(TERN_ECORRUPT, "catalog %s record: checksum mismatch", what);
  *plen = n;
  return TERN_OK;
}

/* ------------------------------------------------------------- format */

void tern_rec_format_encode(uint8_t out[TERN_REC_FORMAT_SIZE]) {
  memcpy(out, k_format_magic, 4);
  tern_store32(out + 4, TERN_CATALOG_VERSION);
}

int tern_rec_format_decode(const uint8_t *buf, size_t len, uint32_t *version) {
  if (len < TERN_REC_FORMAT_SIZE || memcmp(buf, k_format_magic, 4) != 0)
    return tern_fail(TERN_ECORRUPT, "catalog format record: not a tern catalog");
  *version = tern_load32(buf + 4);
  if (*version == 0) return tern_fail(TERN_ECORRUPT, "catalog format record: version 0");
  if (*version != TERN_CATALOG_VERSION)
    return tern_fail(TERN_EVERSION, "catalog format version %u; this library reads only %u",
                     *version, TERN_CATALOG_VERSION);
  size_t plen;
  TERN_TRY(tern_rec_unseal("format", 6, buf, len, &plen, "format"));
  if (plen != TERN_REC_FORMAT_SIZE)
    return tern_fail(TERN_ECORRUPT, "catalog format record: %zu bytes", plen);
  return TERN_OK;
}

/* ------------------------------------------------------------- options */

int tern_rec_options_encode(const tern_options *o, uint8_t **out, size_t *len) {
  size_t cap = 5 * TERN_VARINT64_MAX + TERN_VARINT64_MAX;
  for (size_t i = 0; i < o->nfields; i++)
    cap += 1 + strlen(o->fields[i].field) + TERN_VARINT64_MAX;
  uint8_t *b = malloc(cap), *p = b;
  if (!b) return tern_fail(TERN_ENOMEM, "options record: out of memory");
  p += tern_put_varint(p, o->pulsing_threshold);
  p += tern_put_varint(p, o->inline_value_max);
  p += tern_put_varint(p, o->bloom_bits_per_key);
  p += tern_put_varint(p, o->write_buffer_bytes);
  p += tern_put_varint(p, o->map_size);
  p += tern_put_varint(p, o->nfields);
  for (size_t i = 0; i < o->nfields; i++) {
    size_t n = strlen(o->fields[i].field);
    *p++ = (uint8_t)n;
    memcpy(p, o->fields[i].field, n);
    p += n;
    p += tern_put_varint(p, o->fields[i].threshold);
  }
  *out = b;
  *len = (size_t)(p - b);
  return TERN_OK;
}

int tern_rec_options_decode(tern_rec_options *out, const uint8_t *buf, size_t len) {
  rd r = {buf, buf + len, "options"};
  memset(out, 0, sizeof *out);
  uint64_t nfields;
  TERN_TRY(rd_varint32(&r, &out->pulsing_threshold));
  TERN_TRY(rd_varint32(&r, &out->inline_value_max));
  TERN_TRY(rd_varint32(&r, &out->bloom_bits_per_key));
  TERN_TRY(rd_varint(&r, &out->write_buffer_bytes));
  TERN_TRY(rd_varint(&r, &out->map_size));
  TERN_TRY(rd_varint(&r, &nfields));
  /* Each field takes at least 3 bytes: bounds the allocation by the input. */
  if (nfields > len / 3) return tern_fail(TERN_ECORRUPT, "catalog options record: bad field count");
  if (nfields) {
    out->fields = calloc((size_t)nfields, sizeof *out->fields);
    if (!out->fields) return tern_fail(TERN_ENOMEM, "options record: out of memory");
  }
  out->nfields = (size_t)nfields;
  for (size_t i = 0; i < out->nfields; i++) {
    tern_rec_field *f = &out->fields[i];
    const uint8_t *n = NULL;
    int rc = rd_bytes(&r, 1, &n);
    if (rc == TERN_OK) rc = rd_bytes(&r, (f->name_len = n[0]), &f->name);
    if (rc == TERN_OK) rc = rd_varint32(&r, &f->threshold);
    if (rc == TERN_OK && (f->name_len == 0 || memchr(f->name, 0, f->name_len)))
      rc = tern_fail(TERN_ECORRUPT, "catalog options record: bad field name");
    if (rc != TERN_OK) {
      tern_rec_options_free(out);
      return rc;
    }
  }
  int rc = rd_done(&r);
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
  uint8_t *p = out;
  p += tern_put_varint(p, s->seq);
  p += tern_put_varint(p, s->next_segment);
  p += tern_put_varint(p, s->buffered_docs);
  p += tern_put_varint(p, s->buffered_bytes);
  p += tern_put_varint(p, s->nsegments);
  tern_store64(p, s->seg_digest);
  return (size_t)(p + 8 - out);
}

int tern_rec_state_decode(tern_rec_state *out, const uint8_t *buf, size_t len) {
  rd r = {buf, buf + len, "state"};
  TERN_TRY(rd_varint(&r, &out->seq));
  TERN_TRY(rd_varint(&r, &out->next_segment));
  TERN_TRY(rd_varint(&r, &out->buffered_docs));
  TERN_TRY(rd_varint(&r, &out->buffered_bytes));
  TERN_TRY(rd_varint(&r, &out->nsegments));
  const uint8_t *d = NULL;
  TERN_TRY(rd_bytes(&r, 8, &d));
  out->seg_digest = tern_load64(d);
  return rd_done(&r);
}

/* ------------------------------------------------------------- health */

size_t tern_rec_health_encode(uint8_t out[TERN_REC_HEALTH_MAX], const tern_rec_health *h) {
  uint8_t *p = out;
  size_t mlen = strnlen(h->msg, TERN_REC_HEALTH_MSG_MAX);
  size_t nbad = h->nbad < TERN_REC_HEALTH_BAD_MAX ? h->nbad : TERN_REC_HEALTH_BAD_MAX;
  p += tern_put_varint(p, (uint64_t)(h->status < 0 ? -(int64_t)h->status : 0));
  p += tern_put_varint(p, h->seq);
  p += tern_put_varint(p, nbad);
  for (size_t i = 0; i < nbad; i++)
    p += tern_put_varint(p, h->bad[i]);
  p += tern_put_varint(p, mlen);
  memcpy(p, h->msg, mlen);
  return (size_t)(p + mlen - out);
}

int tern_rec_health_decode(tern_rec_health *out, const uint8_t *buf, size_t len) {
  rd r = {buf, buf + len, "health"};
  uint64_t status, nbad, mlen;
  const uint8_t *m = NULL;
  memset(out, 0, sizeof *out);
  TERN_TRY(rd_varint(&r, &status));
  TERN_TRY(rd_varint(&r, &out->seq));
  TERN_TRY(rd_varint(&r, &nbad));
  if (status > 0x7fffffff || nbad > TERN_REC_HEALTH_BAD_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog health record: status or count out of range");
  out->status = -(int)status;
  out->nbad = (size_t)nbad;
  for (size_t i = 0; i < out->nbad; i++)
    TERN_TRY(rd_varint(&r, &out->bad[i]));
  TERN_TRY(rd_varint(&r, &mlen));
  if (mlen > TERN_REC_HEALTH_MSG_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog health record: message of %llu bytes",
                     (unsigned long long)mlen);
  TERN_TRY(rd_bytes(&r, (size_t)mlen, &m));
  memcpy(out->msg, m, (size_t)mlen);
  out->msg[mlen] = 0;
  return rd_done(&r);
}

/* ------------------------------------------------------------- segments */

void tern_rec_segkey_encode(uint8_t out[TERN_REC_SEGKEY_SIZE], uint64_t number) {
  for (int i = 0; i < 8; i++)
    out[i] = (uint8_t)(number >> (56 - 8 * i));
}

int tern_rec_segkey_decode(const uint8_t *buf, size_t len, uint64_t *number) {
  if (len != TERN_REC_SEGKEY_SIZE)
    return tern_fail(TERN_ECORRUPT, "catalog segment key: %zu bytes, not 8", len);
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | buf[i];
  *number = v;
  return TERN_OK;
}

size_t tern_rec_segment_encode(uint8_t out[TERN_REC_SEGMENT_MAX], const tern_rec_segment *s) {
  uint8_t *p = out;
  memcpy(p, s->segid, TERN_SEGID_SIZE);
  p += TERN_SEGID_SIZE;
  p += tern_put_varint(p, s->max_doc);
  p += tern_put_varint(p, s->deleted);
  p += tern_put_varint(p, s->livedocs_gen);
  return (size_t)(p - out);
}

int tern_rec_segment_decode(tern_rec_segment *out, const uint8_t *buf, size_t len) {
  rd r = {buf, buf + len, "segment"};
  const uint8_t *id = NULL;
  TERN_TRY(rd_bytes(&r, TERN_SEGID_SIZE, &id));
  memcpy(out->segid, id, TERN_SEGID_SIZE);
  TERN_TRY(rd_varint(&r, &out->max_doc));
  TERN_TRY(rd_varint(&r, &out->deleted));
  TERN_TRY(rd_varint(&r, &out->livedocs_gen));
  TERN_TRY(rd_done(&r));
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
  size_t n = tern_varint_len(vlen) + vlen + tern_varint_len(nterms);
  for (size_t i = 0; i < nterms; i++)
    n += 1 + strlen(terms[i].field) + tern_varint_len(terms[i].len) + terms[i].len;
  return n;
}

size_t tern_rec_doc_encode(uint8_t *out, const void *val, size_t vlen, const tern_term *terms,
                           size_t nterms) {
  uint8_t *p = out;
  p += tern_put_varint(p, vlen);
  if (vlen) memcpy(p, val, vlen);
  p += vlen;
  p += tern_put_varint(p, nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = strlen(terms[i].field);
    *p++ = (uint8_t)fl;
    memcpy(p, terms[i].field, fl);
    p += fl;
    p += tern_put_varint(p, terms[i].len);
    memcpy(p, terms[i].term, terms[i].len);
    p += terms[i].len;
  }
  return (size_t)(p - out);
}

static int decode_value(rd *r, const uint8_t **val, size_t *vlen) {
  uint64_t n;
  TERN_TRY(rd_varint(r, &n));
  if (n > TERN_VALUE_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog document record: value of %llu bytes",
                     (unsigned long long)n);
  *vlen = (size_t)n;
  return rd_bytes(r, (size_t)n, val);
}

int tern_rec_doc_value(const uint8_t *buf, size_t len, const uint8_t **val, size_t *vlen) {
  rd r = {buf, buf + len, "document"};
  return decode_value(&r, val, vlen);
}

static int decode_term(rd *r, tern_rec_term *t) {
  const uint8_t *n = NULL;
  uint64_t tl;
  TERN_TRY(rd_bytes(r, 1, &n));
  t->flen = n[0];
  TERN_TRY(rd_bytes(r, t->flen, &t->field));
  TERN_TRY(rd_varint(r, &tl));
  if (t->flen == 0 || memchr(t->field, 0, t->flen) || tl == 0 || tl > TERN_KEY_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog document record: bad field or term length");
  t->tlen = (size_t)tl;
  return rd_bytes(r, t->tlen, &t->term);
}

int tern_rec_doc_decode(tern_rec_doc *out, const uint8_t *buf, size_t len) {
  rd r = {buf, buf + len, "document"};
  TERN_TRY(decode_value(&r, &out->val, &out->vlen));
  TERN_TRY(rd_varint(&r, &out->nterms));
  out->terms = r.p;
  out->end = r.end;
  if (out->nterms > len) return tern_fail(TERN_ECORRUPT, "catalog document record: bad term count");
  for (uint64_t i = 0; i < out->nterms; i++) {
    tern_rec_term t;
    TERN_TRY(decode_term(&r, &t));
  }
  return rd_done(&r);
}

void tern_rec_terms_init(tern_rec_terms *it, const tern_rec_doc *d) {
  it->p = d->terms;
  it->end = d->end;
  it->left = d->nterms;
}

int tern_rec_terms_next(tern_rec_terms *it, tern_rec_term *t) {
  if (it->left == 0) return 0;
  rd r = {it->p, it->end, "document"};
  TERN_TRY(decode_term(&r, t));
  it->p = r.p;
  it->left--;
  return 1;
}

/* ------------------------------------------------------------- buffer entries */

static void long_key_hash(uint8_t out[16], const void *key, size_t klen) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(key, klen));
  memcpy(out, c.digest, 16);
}

size_t tern_rec_bufkey(uint8_t out[TERN_REC_BUFKEY_MAX], const void *key, size_t klen) {
  if (klen <= TERN_REC_BUFKEY_PLAIN) {
    memcpy(out, key, klen);
    return klen;
  }
  memcpy(out, key, TERN_REC_BUFKEY_PREFIX);
  long_key_hash(out + TERN_REC_BUFKEY_PREFIX, key, klen);
  out[TERN_REC_BUFKEY_MAX - 1] = 0x01;
  return TERN_REC_BUFKEY_MAX;
}

static size_t key_tail(size_t klen) {
  return klen <= TERN_REC_BUFKEY_PLAIN ? 0 : klen - TERN_REC_BUFKEY_PREFIX;
}

size_t tern_rec_bufval_size(size_t klen, size_t dlen) {
  size_t tail = key_tail(klen);
  return tern_varint_len(tail) + tail + dlen;
}

void tern_rec_bufval_encode(uint8_t *out, const void *key, size_t klen, const uint8_t *doc,
                            size_t dlen) {
  size_t tail = key_tail(klen);
  out += tern_put_varint(out, tail);
  if (tail) memcpy(out, (const uint8_t *)key + TERN_REC_BUFKEY_PREFIX, tail);
  if (dlen) memcpy(out + tail, doc, dlen);
}

int tern_rec_bufval_decode(const uint8_t *lkey, size_t lklen, const uint8_t *val, size_t vlen,
                           uint8_t *key, size_t *klen, const uint8_t **doc, size_t *dlen) {
  rd r = {val, val + vlen, "buffer entry"};
  uint64_t tail;
  const uint8_t *t = NULL;
  TERN_TRY(rd_varint(&r, &tail));
  if (lklen == 0 || lklen > TERN_REC_BUFKEY_MAX)
    return tern_fail(TERN_ECORRUPT, "catalog buffer entry: key of %zu bytes", lklen);
  if (lklen <= TERN_REC_BUFKEY_PLAIN) {
    if (tail != 0) return tern_fail(TERN_ECORRUPT, "catalog buffer entry: tail on a plain key");
    memcpy(key, lkey, lklen);
    *klen = lklen;
  } else {
    if (tail + TERN_REC_BUFKEY_PREFIX <= TERN_REC_BUFKEY_PLAIN ||
        tail + TERN_REC_BUFKEY_PREFIX > TERN_KEY_MAX || lkey[lklen - 1] != 0x01)
      return tern_fail(TERN_ECORRUPT, "catalog buffer entry: bad long key");
    TERN_TRY(rd_bytes(&r, (size_t)tail, &t));
    memcpy(key, lkey, TERN_REC_BUFKEY_PREFIX);
    memcpy(key + TERN_REC_BUFKEY_PREFIX, t, (size_t)tail);
    *klen = TERN_REC_BUFKEY_PREFIX + (size_t)tail;
    uint8_t h[16];
    long_key_hash(h, key, *klen);
    if (memcmp(h, lkey + TERN_REC_BUFKEY_PREFIX, 16) != 0)
      return tern_fail(TERN_ECORRUPT, "catalog buffer entry: long key hash mismatch");
  }
  *doc = r.p;
  *dlen = (size_t)(r.end - r.p);
  return TERN_OK;
}

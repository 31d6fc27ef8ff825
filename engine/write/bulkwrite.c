/* SPDX-License-Identifier: MIT */
/*
 * bulkwrite.c — a gatherer thread and the codec's writer, overlapped
 * through a ring of chunks (bulkwrite.h).
 */
#include "engine/write/bulkwrite.h"

#include "engine/format/catalog_schema.h"
#include "codec/segment.h"
#include "codec/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 4096, RING = 4, THREADED_MIN = 1 << 16 };
/* Bytes of keys and small values copied per chunk, so that the codec's
 * thread reads them sequentially (larger values are referenced). */
enum { CHUNK_BYTES = 256 << 10, COPY_MAX = 2048 };

typedef struct entry {
  const uint8_t *key, *val;
  uint32_t klen, vlen;
} entry;

typedef struct ring {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  entry *buf;     /* RING chunks of CHUNK entries */
  uint8_t *bytes; /* RING areas of CHUNK_BYTES */
  size_t count[RING];
  uint64_t produced, consumed; /* chunks */
  int done, stop, err;
  const tern_mdoc *ops;
  const uint32_t *order;
  size_t n, next;
  tern_progress_fn progress; /* may be NULL */
  void *payload;
  uint64_t live; /* documents to write, for progress */
} ring;

static void report(const ring *r, const char *phase, uint64_t done, uint64_t total) {
  if (r->progress) r->progress(r->payload, phase, done, total);
}

/* Gathers the next live documents into out[0..CHUNK), copying keys and
 * small values into area[0..CHUNK_BYTES). */
static int fill_chunk(ring *r, entry *out, uint8_t *area, size_t *count) {
  size_t k = 0, used = 0;
  while (r->next < r->n && k < CHUNK) {
    size_t i = r->next++;
    if (i + 16 < r->n) __builtin_prefetch(&r->ops[r->order[i + 16]]);
    if (i + 8 < r->n) __builtin_prefetch(r->ops[r->order[i + 8]].doc);
    const tern_mdoc *d = &r->ops[r->order[i]];
    if (!d->doc) continue;
    const uint8_t *v;
    size_t vl;
    TERN_TRY(tern_rec_doc_value(d->doc, d->key.aux, &v, &vl));
    entry e = {d->key.p, v, d->key.len, (uint32_t)vl};
    size_t need = e.klen + (vl <= COPY_MAX ? vl : 0);
    if (used + need > CHUNK_BYTES) {
      r->next--; /* the area is full: this doc starts the next chunk */
      break;
    }
    memcpy(area + used, e.key, e.klen);
    e.key = area + used;
    used += e.klen;
    if (vl <= COPY_MAX) {
      if (vl) memcpy(area + used, v, vl);
      e.val = area + used;
      used += vl;
    }
    out[k++] = e;
  }
  *count = k;
  return TERN_OK;
}

static void *gatherer(void *arg) {
  ring *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->produced - r->consumed == RING && !r->stop)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->stop) break;
    size_t slot = (size_t)(r->produced % RING), cnt = 0;
    pthread_mutex_unlock(&r->mu);
    int rc = fill_chunk(r, r->buf + slot * CHUNK, r->bytes + slot * CHUNK_BYTES, &cnt);
    pthread_mutex_lock(&r->mu);
    if (rc != TERN_OK) r->err = rc;
    if (rc != TERN_OK || cnt == 0) {
      r->done = 1;
      pthread_cond_broadcast(&r->cv);
      break;
    }
    r->count[slot] = cnt;
    r->produced++;
    pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static int write_chunk(const ring *r, tern_segw *w, const entry *e, size_t n, uint32_t *next) {
  for (size_t i = 0; i < n; i++) {
    TERN_TRY(tern_segw_term(w, e[i].key, e[i].klen, next, 1, e[i].val, e[i].vlen));
    (*next)++;
  }
  report(r, "write", *next, r->live);
  return TERN_OK;
}

static int unique_threaded(ring *r, tern_segw *w, uint32_t *next) {
  pthread_t th;
  if (pthread_create(&th, NULL, gatherer, r) != 0) return -1; /* caller falls back */
  int rc = TERN_OK;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->consumed == r->produced && !r->done)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->consumed == r->produced) {
      if (r->err) rc = tern_fail(r->err, "bulk commit: a document record is malformed");
      break;
    }
    size_t slot = (size_t)(r->consumed % RING);
    pthread_mutex_unlock(&r->mu);
    rc = write_chunk(r, w, r->buf + slot * CHUNK, r->count[slot], next);
    pthread_mutex_lock(&r->mu);
    r->consumed++;
    pthread_cond_broadcast(&r->cv);
    if (rc != TERN_OK) break;
  }
  r->stop = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(th, NULL);
  return rc;
}

static int unique_inline(ring *r, tern_segw *w, uint32_t *next) {
  size_t cnt;
  do {
    TERN_TRY(fill_chunk(r, r->buf, r->bytes, &cnt));
    TERN_TRY(write_chunk(r, w, r->buf, cnt, next));
  } while (cnt);
  return TERN_OK;
}

/* The unique field: keys, doc ids = ranks, values. */
static int write_unique(tern_segw *w, const tern_options *o, ring *r, uint32_t *ndocs) {
  TERN_TRY(tern_segw_field(w, "", 0, TERN_FIELD_UNIQUE, o->pulsing_threshold));
  *ndocs = 0;
  if (r->n >= THREADED_MIN) {
    int rc = unique_threaded(r, w, ndocs);
    if (rc != -1) return rc;
  }
  return unique_inline(r, w, ndocs);
}

/* The secondary fields: inverted from the live documents in order. */
int tern_bulk_write(const char *dir, const char *name, const tern_options *o, const tern_mdoc *ops,
                    const uint32_t *order, size_t n, int has_terms, uint32_t *ndocs,
                    tern_progress_fn fn, void *payload, uint8_t *segid) {
  size_t live = 0;
  for (size_t i = 0; i < n; i++)
    live += ops[order[i]].doc != NULL;
  *ndocs = 0;
  if (!live) return TERN_OK;
  tern_segw_options so;
  tern_segw_options_init(&so);
  so.inline_value_max = o->inline_value_max;
  so.bloom_bits_per_key = o->bloom_bits_per_key;
  ring r;
  memset(&r, 0, sizeof r);
  r.ops = ops;
  r.order = order;
  r.n = n;
  r.progress = fn;
  r.payload = payload;
  r.live = live;
  r.buf = malloc((size_t)RING * CHUNK * sizeof *r.buf);
  r.bytes = malloc((size_t)RING * CHUNK_BYTES);
  if (!r.buf || !r.bytes) {
    free(r.buf);
    free(r.bytes);
    return tern_fail(TERN_ENOMEM, "bulk commit: out of memory");
  }
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  tern_segw *w;
  uint32_t written = 0;
  int rc = tern_segw_open(&w, dir, name, &so);
  if (rc == TERN_OK) {
    memcpy(segid, tern_segw_id(w), TERN_SEGID_SIZE);
    report(&r, "write", 0, live);
    rc = write_unique(w, o, &r, &written);
    report(&r, "terms", 0, 1);
    if (rc == TERN_OK && has_terms) rc = tern_bulk_write_terms(w, o, ops, order, n);
    report(&r, "terms", 1, 1);
    report(&r, "sync", 0, 1);
    if (rc == TERN_OK)
      rc = tern_segw_finish(w, written);
    else
      tern_segw_abort(w);
    report(&r, "sync", 1, 1);
  }
  pthread_cond_destroy(&r.cv);
  pthread_mutex_destroy(&r.mu);
  free(r.buf);
  free(r.bytes);
  if (rc == TERN_OK) *ndocs = written;
  return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * spare_buf.c — buffers made ready ahead of the read that fills them
 * (spare_buf.h).
 */
#include "codec/spare_buf.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPARE_SLOTS 8
#define SPARE_MAX_BYTES (8u << 20) /* all buffers together: more is memory held for a hint */
#define SPARE_PAGE 4096u

typedef struct spare {
  char *key; /* NULL: a free slot */
  size_t len;
  void *buf;
  uint64_t age; /* readied order: the oldest goes first */
} spare;

static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static spare spares[SPARE_SLOTS]; /* under spare_mu */
static size_t spare_bytes;        /* under spare_mu */
static uint64_t spare_clock;      /* under spare_mu */

/* REQUIRES: spare_mu held. */
static void slot_free(spare *s) {
  if (!s->key) return;
  assert(spare_bytes >= s->len);
  spare_bytes -= s->len;
  free(s->key);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

/* REQUIRES: spare_mu held. */
static spare *slot_of(const char *key) {
  for (int i = 0; i < SPARE_SLOTS; i++)
    if (spares[i].key && !strcmp(spares[i].key, key)) return &spares[i];
  return NULL;
}

/* A slot with room for len more bytes, the oldest buffers freed for it.
 * REQUIRES: spare_mu held. */
static spare *slot_for(size_t len) {
  for (;;) {
    spare *free_slot = NULL, *oldest = NULL;
    for (int i = 0; i < SPARE_SLOTS; i++) {
      if (!spares[i].key) {
        if (!free_slot) free_slot = &spares[i];
      } else if (!oldest || spares[i].age < oldest->age) {
        oldest = &spares[i];
      }
    }
    if (free_slot && spare_bytes + len <= SPARE_MAX_BYTES) return free_slot;
    assert(oldest || spare_bytes == 0); /* no buffer held: the bytes are 0 */
    if (!oldest) return NULL;
    slot_free(oldest);
  }
}

/* One write per page: the fault that gives the page happens now. */
static void touch_pages(uint8_t *b, size_t len) {
  for (size_t off = 0; off < len; off += SPARE_PAGE) b[off] = 0;
  b[len - 1] = 0;
}

void tern_spare_ready(const char *key, size_t len) {
  if (!len || len > SPARE_MAX_BYTES) return;
  /* Allocated and touched outside the lock: that is the slow part. */
  char *k = strdup(key);
  uint8_t *buf = malloc(len);
  if (!k || !buf) {
    free(k);
    free(buf);
    return;
  }
  touch_pages(buf, len);
  pthread_mutex_lock(&spare_mu);
  spare *old = slot_of(key);
  if (old) slot_free(old); /* the newer length wins */
  spare *s = slot_for(len);
  if (s) {
    *s = (spare){k, len, buf, ++spare_clock};
    spare_bytes += len;
    assert(spare_bytes <= SPARE_MAX_BYTES);
    k = NULL;
    buf = NULL;
  }
  pthread_mutex_unlock(&spare_mu);
  free(k);
  free(buf);
}

void *tern_spare_take(const char *key, size_t len) {
  void *buf = NULL;
  pthread_mutex_lock(&spare_mu);
  spare *s = slot_of(key);
  if (s && s->len == len) {
    buf = s->buf;
    s->buf = NULL;
  }
  if (s) slot_free(s); /* taken, or for a length the file no longer has */
  pthread_mutex_unlock(&spare_mu);
  return buf;
}

void tern_spare_clear(void) {
  pthread_mutex_lock(&spare_mu);
  for (int i = 0; i < SPARE_SLOTS; i++) slot_free(&spares[i]);
  pthread_mutex_unlock(&spare_mu);
}

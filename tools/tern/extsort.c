/*
 * extsort.c — runs sorted in memory, spilled, merged (extsort.h).
 *
 * A record, in memory and in run files alike:
 *
 *   u32 total length | u64 line | u32 klen | key | u32 vlen | value |
 *   u32 nterms | nterms x (u32 flen | field | u32 tlen | term)
 *
 * integers in host order (the files live only as long as the process).
 */
#include "extsort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { READ_BUF = 1 << 20, WRITE_BUF = 4 << 20 };
/* Bytes a record costs in memory besides its own: its sort entry and the
 * radix sort's scratch copy of it. */
enum { PER_RECORD = 2 * 16 };

typedef struct entry {
  uint64_t pre; /* 8 key bytes from the current depth, big-endian, zero-padded */
  uint64_t off; /* of the record in the run buffer */
} entry;

typedef struct run {
  int fd;
  uint8_t *buf; /* READ_BUF bytes, or more for a long record */
  size_t cap, pos, end;
  int eof;
  const uint8_t *rec; /* the current record, NULL when done */
  uint64_t seq;       /* run number: ties go to the older run (input order) */
} run;

struct extsort {
  size_t budget;
  size_t mem_limit; /* bytes of records held in memory */
  size_t ent_limit; /* records held in memory (PER_RECORD bytes each) */
  char *tmpdir;
  uint8_t *mem; /* the in-memory run */
  size_t used, cap;
  entry *ents, *scratch;
  size_t n, ecap;
  uint64_t count;
  run *runs;
  size_t nruns, runs_cap;
  /* merge */
  int in_memory; /* no spill: hand out the sorted buffer */
  size_t next;
  run **heap;
  size_t nheap;
  int pending; /* heap[0]'s record was handed out */
  tern_term *terms;
  size_t terms_cap;
};

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint64_t get64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint8_t *put32(uint8_t *p, uint32_t v) {
  memcpy(p, &v, 4);
  return p + 4;
}

static const uint8_t *rec_key(const uint8_t *rec, size_t *klen) {
  *klen = get32(rec + 12);
  return rec + 16;
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

/* ------------------------------------------------------------ building runs */

int extsort_new(extsort **out, size_t budget, const char *tmpdir) {
  extsort *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  s->budget = budget < (4u << 20) ? (4u << 20) : budget;
  /* 5/8 of the budget for the records, 3/8 for their entries: a record of
   * a 16-byte key and an 8-byte value takes 48 bytes, its entries 32. */
  s->mem_limit = s->budget / 8 * 5;
  s->ent_limit = s->budget / 8 * 3 / PER_RECORD;
  s->tmpdir = strdup(tmpdir);
  if (!s->tmpdir) {
    free(s);
    return -ENOMEM;
  }
  *out = s;
  return 0;
}

void extsort_free(extsort *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nruns; i++) {
    if (s->runs[i].fd >= 0) close(s->runs[i].fd);
    free(s->runs[i].buf);
  }
  free(s->runs);
  free(s->heap);
  free(s->mem);
  free(s->ents);
  free(s->scratch);
  free(s->terms);
  free(s->tmpdir);
  free(s);
}

size_t extsort_runs(const extsort *s) { return s->nruns; }
uint64_t extsort_count(const extsort *s) { return s->count; }

static uint64_t prefix_at(const uint8_t *rec, size_t depth) {
  size_t klen;
  const uint8_t *k = rec_key(rec, &klen);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; i++)
    v = v << 8 | (depth + i < klen ? k[depth + i] : 0);
  return v;
}

/* LSD radix sort of e[0..n) by pre, 16 bits a pass, skipping passes where
 * every entry has the same digit.  Stable. */
static void radix_pre(entry *e, entry *tmp, size_t n) {
  static size_t count[1 << 16];
  for (int pass = 0; pass < 4; pass++) {
    int shift = pass * 16;
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
      count[(e[i].pre >> shift) & 0xffff]++;
    if (count[(e[0].pre >> shift) & 0xffff] == n) continue;
    size_t sum = 0;
    for (size_t d = 0; d < (1 << 16); d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      tmp[count[(e[i].pre >> shift) & 0xffff]++] = e[i];
    memcpy(e, tmp, n * sizeof *e);
  }
}

static void insertion(entry *e, size_t n, const uint8_t *mem) {
  for (size_t i = 1; i < n; i++) {
    entry x = e[i];
    size_t xl;
    const uint8_t *xk = rec_key(mem + x.off, &xl);
    size_t j = i;
    while (j > 0) {
      size_t yl;
      const uint8_t *yk = rec_key(mem + e[j - 1].off, &yl);
      if (key_cmp(yk, yl, xk, xl) <= 0) break;
      e[j] = e[j - 1];
      j--;
    }
    e[j] = x;
  }
}

/* Sorts e[0..n), whose keys agree on their first `depth` bytes. */
static void sort_range(entry *e, entry *tmp, size_t n, size_t depth, const uint8_t *mem) {
  if (n < 2) return;
  if (n < 24) {
    insertion(e, n, mem);
    return;
  }
  for (size_t i = 0; i < n; i++)
    e[i].pre = prefix_at(mem + e[i].off, depth);
  radix_pre(e, tmp, n);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && e[j].pre == e[i].pre)
      j++;
    if (j - i > 1) {
      /* equal 8 bytes: go deeper unless every key ended inside them */
      size_t maxlen = 0;
      for (size_t k = i; k < j; k++) {
        size_t kl;
        rec_key(mem + e[k].off, &kl);
        if (kl > maxlen) maxlen = kl;
      }
      if (maxlen > depth + 8)
        sort_range(e + i, tmp, j - i, depth + 8, mem);
      else
        insertion(e + i, j - i, mem); /* equal padded bytes: shorter keys first */
    }
    i = j;
  }
}

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The in-memory run, sorted, to a fresh unlinked temporary file. */
static int spill(extsort *s) {
  if (s->n == 0) return 0;
  sort_range(s->ents, s->scratch, s->n, 0, s->mem);
  run *r = realloc(s->runs, (s->nruns + 1) * sizeof *r);
  if (!r) return -ENOMEM;
  s->runs = r;
  size_t plen = strlen(s->tmpdir) + 32;
  char *path = malloc(plen);
  if (!path) return -ENOMEM;
  snprintf(path, plen, "%s/tern-build-XXXXXX", s->tmpdir);
  int fd = mkstemp(path);
  int rc = fd < 0 ? -errno : 0;
  if (fd >= 0) unlink(path); /* gone with the process, whatever happens */
  free(path);
  if (rc) return rc;
  uint8_t *out = malloc(WRITE_BUF);
  size_t used = 0;
  if (!out) rc = -ENOMEM;
  for (size_t i = 0; rc == 0 && i < s->n; i++) {
    const uint8_t *rec = s->mem + s->ents[i].off;
    size_t len = get32(rec);
    if (used + len > WRITE_BUF) {
      rc = write_all(fd, out, used);
      used = 0;
    }
    if (rc == 0 && len > WRITE_BUF) {
      rc = write_all(fd, rec, len);
    } else if (rc == 0) {
      memcpy(out + used, rec, len);
      used += len;
    }
  }
  if (rc == 0) rc = write_all(fd, out, used);
  free(out);
  if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0) rc = -errno;
  if (rc) {
    close(fd);
    return rc;
  }
  s->runs[s->nruns] = (run){.fd = fd, .seq = s->nruns};
  s->nruns++;
  s->used = s->n = 0;
  return 0;
}

static size_t record_size(size_t klen, size_t vlen, const tern_term *terms, size_t nterms) {
  size_t n = 4 + 8 + 4 + klen + 4 + vlen + 4;
  for (size_t i = 0; i < nterms; i++)
    n += 4 + strlen(terms[i].field) + 4 + terms[i].len;
  return n;
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Room for one more record of `need` bytes, growing by doubling but never
 * past the limits (a record larger than mem_limit gets a buffer its size). */
static int grow(extsort *s, size_t need) {
  if (s->used + need > s->cap) {
    size_t limit = s->used + need > s->mem_limit ? s->used + need : s->mem_limit;
    size_t cap = s->cap ? s->cap : (1u << 20);
    while (cap < s->used + need)
      cap *= 2;
    cap = min_size(cap, limit);
    uint8_t *m = realloc(s->mem, cap);
    if (!m) return -ENOMEM;
    s->mem = m;
    s->cap = cap;
  }
  if (s->n == s->ecap) {
    size_t cap = min_size(s->ecap ? 2 * s->ecap : 4096, s->ent_limit);
    if (cap <= s->n) cap = s->n + 1;
    entry *e = realloc(s->ents, cap * sizeof *e);
    if (!e) return -ENOMEM;
    s->ents = e;
    entry *t = realloc(s->scratch, cap * sizeof *t);
    if (!t) return -ENOMEM;
    s->scratch = t;
    s->ecap = cap;
  }
  return 0;
}

int extsort_add(extsort *s, const void *key, size_t klen, const void *val, size_t vlen,
                const tern_term *terms, size_t nterms, uint64_t line) {
  size_t need = record_size(klen, vlen, terms, nterms);
  if (need > UINT32_MAX) return -E2BIG;
  if (s->n && (s->used + need > s->mem_limit || s->n >= s->ent_limit)) {
    int rc = spill(s);
    if (rc) return rc;
  }
  int rc = grow(s, need);
  if (rc) return rc;
  uint8_t *p = s->mem + s->used;
  p = put32(p, (uint32_t)need);
  memcpy(p, &line, 8);
  p += 8;
  p = put32(p, (uint32_t)klen);
  memcpy(p, key, klen);
  p += klen;
  p = put32(p, (uint32_t)vlen);
  if (vlen) memcpy(p, val, vlen);
  p += vlen;
  p = put32(p, (uint32_t)nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = strlen(terms[i].field);
    p = put32(p, (uint32_t)fl);
    memcpy(p, terms[i].field, fl);
    p += fl;
    p = put32(p, (uint32_t)terms[i].len);
    memcpy(p, terms[i].term, terms[i].len);
    p += terms[i].len;
  }
  s->ents[s->n++] = (entry){0, s->used};
  s->used += need;
  s->count++;
  return 0;
}

/* ------------------------------------------------------------ merging */

/* Makes r->rec the run's next record (NULL at its end). */
static int run_advance(run *r) {
  if (r->rec) r->pos += get32(r->rec);
  r->rec = NULL;
  for (;;) {
    size_t have = r->end - r->pos;
    if (have >= 4 && have >= get32(r->buf + r->pos)) {
      r->rec = r->buf + r->pos;
      return 0;
    }
    if (r->eof) return have ? -EBADMSG : 0;
    size_t need = have >= 4 ? get32(r->buf + r->pos) : READ_BUF;
    memmove(r->buf, r->buf + r->pos, have);
    r->pos = 0;
    r->end = have;
    if (need > r->cap) {
      uint8_t *b = realloc(r->buf, need);
      if (!b) return -ENOMEM;
      r->buf = b;
      r->cap = need;
    }
    ssize_t got = read(r->fd, r->buf + r->end, r->cap - r->end);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -errno;
    if (got == 0) r->eof = 1;
    r->end += (size_t)got;
  }
}

static int run_less(const run *a, const run *b) {
  size_t al, bl;
  const uint8_t *ak = rec_key(a->rec, &al), *bk = rec_key(b->rec, &bl);
  int c = key_cmp(ak, al, bk, bl);
  return c < 0 || (c == 0 && a->seq < b->seq);
}

static void sift_down(run **h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && run_less(h[l], h[m])) m = l;
    if (l + 1 < n && run_less(h[l + 1], h[m])) m = l + 1;
    if (m == i) return;
    run *t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

int extsort_finish(extsort *s) {
  if (s->nruns == 0) {
    sort_range(s->ents, s->scratch, s->n, 0, s->mem);
    free(s->scratch); /* not needed any more */
    s->scratch = NULL;
    s->in_memory = 1;
    return 0;
  }
  int rc = spill(s);
  if (rc) return rc;
  free(s->mem);
  free(s->ents);
  free(s->scratch);
  s->mem = NULL;
  s->ents = s->scratch = NULL;
  s->cap = s->ecap = 0;
  s->heap = malloc(s->nruns * sizeof *s->heap);
  if (!s->heap) return -ENOMEM;
  for (size_t i = 0; i < s->nruns; i++) {
    run *r = &s->runs[i];
    if (!(r->buf = malloc(READ_BUF))) return -ENOMEM;
    r->cap = READ_BUF;
    if ((rc = run_advance(r))) return rc;
    if (r->rec) s->heap[s->nheap++] = r;
  }
  for (size_t i = s->nheap; i-- > 0;)
    sift_down(s->heap, s->nheap, i);
  return 0;
}

static int decode(extsort *s, const uint8_t *rec, ext_doc *d) {
  const uint8_t *p = rec + 4;
  d->line = get64(p);
  p += 8;
  d->klen = get32(p);
  d->key = p + 4;
  p += 4 + d->klen;
  d->vlen = get32(p);
  d->val = p + 4;
  p += 4 + d->vlen;
  size_t nt = get32(p);
  p += 4;
  if (nt > s->terms_cap) {
    tern_term *t = realloc(s->terms, nt * sizeof *t);
    if (!t) return -ENOMEM;
    s->terms = t;
    s->terms_cap = nt;
  }
  /* Field names are C strings: each is followed by its term's length,
   * whose first byte becomes the NUL once the length is read (the record
   * is not used again). */
  for (size_t i = 0; i < nt; i++) {
    size_t fl = get32(p);
    uint8_t *field = (uint8_t *)p + 4;
    p += 4 + fl;
    size_t tl = get32(p);
    s->terms[i] = (tern_term){(const char *)field, p + 4, tl};
    *(uint8_t *)p = 0;
    p += 4 + tl;
  }
  d->terms = s->terms;
  d->nterms = nt;
  return 1;
}

int extsort_next(extsort *s, ext_doc *d) {
  if (s->in_memory) {
    if (s->next >= s->n) return 0;
    return decode(s, s->mem + s->ents[s->next++].off, d);
  }
  /* The record handed out last stays valid until this call: only now
   * does its run move on. */
  if (s->pending) {
    s->pending = 0;
    run *top = s->heap[0];
    int rc = run_advance(top);
    if (rc) return rc;
    if (!top->rec) s->heap[0] = s->heap[--s->nheap];
    sift_down(s->heap, s->nheap, 0);
  }
  if (s->nheap == 0) return 0;
  s->pending = 1;
  return decode(s, s->heap[0]->rec, d);
}

/* SPDX-License-Identifier: MIT */
/*
 * extsort.c — runs sorted in memory, spilled, merged (extsort.h).
 *
 * A record, in memory and in run files alike:
 *
 *   u32 total length (host order) | varint klen | key | varint vlen | value |
 *   varint line | varint nterms | nterms x (varint flen | field | varint tlen | term)
 *
 * (the files live only as long as the process).  Varints keep a record of
 * a 16-byte key and value at 43 bytes instead of 56 with fixed integers:
 * writing the runs is most of what spilling costs.
 */
#include "extsort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { READ_BUF = 1 << 20, WRITE_BUF = 4 << 20, PREFETCH = 16 };
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
  uint8_t *mem; /* the in-memory run: mem_limit bytes reserved */
  size_t used;
  entry *ents, *scratch; /* ent_limit each, reserved */
  size_t n;
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

#define TERN_CLI_TRY(expr)                                                                         \
  do {                                                                                             \
    int try_rc_ = (expr);                                                                          \
    if (try_rc_) return try_rc_;                                                                   \
  } while (0)

static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static uint8_t *put32(uint8_t *p, uint32_t v) {
  memcpy(p, &v, 4);
  return p + 4;
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* Records are this process's own bytes: no bound needed. */
static const uint8_t *get_varint(const uint8_t *p, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t b = *p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  *v = x;
  return p;
}

static const uint8_t *rec_key(const uint8_t *rec, size_t *klen) {
  uint64_t n;
  const uint8_t *k = get_varint(rec + 4, &n);
  *klen = (size_t)n;
  return k;
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

/* ------------------------------------------------------------ building runs */

/* The run's arrays are reserved whole at once (address space only: pages
 * count towards RSS when first written) and asked for as huge pages: the
 * sort and the hand-out in key order touch records at random, and with
 * 4 KiB pages every touch was a TLB miss as well as a cache miss. */
static void *reserve(size_t len) {
  void *p =
      mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, len, MADV_HUGEPAGE);
#endif
  return p;
}

static void release(void *p, size_t len) {
  if (p) munmap(p, len);
}

static void release_run(extsort *s) {
  release(s->mem, s->mem_limit);
  release(s->ents, s->ent_limit * sizeof *s->ents);
  release(s->scratch, s->ent_limit * sizeof *s->scratch);
  s->mem = NULL;
  s->ents = s->scratch = NULL;
}

int extsort_new(extsort **out, size_t budget, const char *tmpdir) {
  extsort *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  s->budget = budget < (4u << 20) ? (4u << 20) : budget;
  /* 9/16 of the budget for the records, 7/16 for their entries: a record
   * of a 16-byte key and a 16-byte value takes 43 bytes, its entries 32. */
  s->mem_limit = s->budget / 16 * 9;
  s->ent_limit = s->budget / 16 * 7 / PER_RECORD;
  s->tmpdir = strdup(tmpdir);
  s->mem = reserve(s->mem_limit);
  s->ents = reserve(s->ent_limit * sizeof *s->ents);
  s->scratch = reserve(s->ent_limit * sizeof *s->scratch);
  if (!s->tmpdir || !s->mem || !s->ents || !s->scratch) {
    extsort_free(s);
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
  release_run(s);
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
 * every entry has the same digit.  Stable.  The four digits' counts are
 * taken in one read of the entries, and the passes go back and forth
 * between e and tmp (one copy at the end when an odd number ran). */
static void radix_pre(entry *e, entry *tmp, size_t n) {
  static size_t count[4][1 << 16];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; i++) {
    uint64_t p = e[i].pre;
    count[0][p & 0xffff]++;
    count[1][(p >> 16) & 0xffff]++;
    count[2][(p >> 32) & 0xffff]++;
    count[3][p >> 48]++;
  }
  entry *src = e, *dst = tmp;
  for (int pass = 0; pass < 4; pass++) {
    int shift = pass * 16;
    size_t *c = count[pass];
    if (c[(src[0].pre >> shift) & 0xffff] == n) continue;
    size_t sum = 0;
    for (size_t d = 0; d < (1 << 16); d++) {
      size_t k = c[d];
      c[d] = sum;
      sum += k;
    }
    for (size_t i = 0; i < n; i++)
      dst[c[(src[i].pre >> shift) & 0xffff]++] = src[i];
    entry *t = src;
    src = dst;
    dst = t;
  }
  if (src != e) memcpy(e, src, n * sizeof *e);
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

enum { SMALL_GROUP = 2048 };
/* qsort's comparator's context (the command is single-threaded). */
static const uint8_t *g_mem;
static size_t g_depth;

/* Entries whose keys agree on g_depth bytes, by their next 8 (pre), then
 * the rest; ties by offset, i.e. input order (qsort is not stable). */
static int cmp_entries(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->pre != y->pre) return x->pre < y->pre ? -1 : 1;
  size_t xl, yl;
  const uint8_t *xk = rec_key(g_mem + x->off, &xl), *yk = rec_key(g_mem + y->off, &yl);
  size_t d = g_depth + 8;
  int c = key_cmp(xk + (xl < d ? xl : d), xl < d ? 0 : xl - d, yk + (yl < d ? yl : d),
                  yl < d ? 0 : yl - d);
  if (c == 0) c = (xl > yl) - (xl < yl); /* zero padding hid a length difference */
  return c ? c : (x->off > y->off) - (x->off < y->off);
}

/* Sorts e[0..n), whose keys agree on their first `depth` bytes. */
static void sort_range(entry *e, entry *tmp, size_t n, size_t depth, const uint8_t *mem) {
  if (n < 2) return;
  if (n < 24) {
    insertion(e, n, mem);
    return;
  }
  if (n < SMALL_GROUP) { /* a radix pass costs its 64K counters: compare instead */
    g_mem = mem;
    g_depth = depth;
    for (size_t i = 0; i < n; i++)
      e[i].pre = prefix_at(mem + e[i].off, depth);
    qsort(e, n, sizeof *e, cmp_entries);
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

/* A fresh temporary file in tmpdir, unlinked at once (gone with the
 * process, whatever happens), listed as the next run. */
static int new_run(extsort *s, int *fd) {
  run *r = realloc(s->runs, (s->nruns + 1) * sizeof *r);
  if (!r) return -ENOMEM;
  s->runs = r;
  size_t plen = strlen(s->tmpdir) + 32;
  char *path = malloc(plen);
  if (!path) return -ENOMEM;
  snprintf(path, plen, "%s/tern-build-XXXXXX", s->tmpdir);
  *fd = mkstemp(path);
  int rc = *fd < 0 ? -errno : 0;
  if (*fd >= 0) unlink(path);
  free(path);
  return rc;
}

/* Rewinds the run just written and keeps it (closes it on failure). */
static int keep_run(extsort *s, int fd, int rc) {
  if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0) rc = -errno;
  if (rc) {
    close(fd);
    return rc;
  }
  s->runs[s->nruns] = (run){.fd = fd, .seq = s->nruns};
  s->nruns++;
  return 0;
}

/* The in-memory run, sorted, to a run file. */
static int spill(extsort *s) {
  if (s->n == 0) return 0;
  sort_range(s->ents, s->scratch, s->n, 0, s->mem);
  int fd;
  int rc = new_run(s, &fd);
  if (rc) return rc;
  uint8_t *out = malloc(WRITE_BUF);
  size_t used = 0;
  if (!out) rc = -ENOMEM;
  for (size_t i = 0; rc == 0 && i < s->n; i++) {
    if (i + PREFETCH < s->n) __builtin_prefetch(s->mem + s->ents[i + PREFETCH].off);
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
  TERN_CLI_TRY(keep_run(s, fd, rc));
  s->used = s->n = 0;
  return 0;
}

static size_t record_size(size_t klen, size_t vlen, const tern_term *terms, size_t nterms,
                          uint64_t line) {
  size_t n =
      4 + varint_len(klen) + klen + varint_len(vlen) + vlen + varint_len(line) + varint_len(nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = strlen(terms[i].field);
    n += varint_len(fl) + fl + varint_len(terms[i].len) + terms[i].len;
  }
  return n;
}

static void put_record(uint8_t *p, size_t need, const void *key, size_t klen, const void *val,
                       size_t vlen, const tern_term *terms, size_t nterms, uint64_t line) {
  p = put32(p, (uint32_t)need);
  p = put_varint(p, klen);
  memcpy(p, key, klen);
  p += klen;
  p = put_varint(p, vlen);
  if (vlen) memcpy(p, val, vlen);
  p += vlen;
  p = put_varint(p, line);
  p = put_varint(p, nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = strlen(terms[i].field);
    p = put_varint(p, fl);
    memcpy(p, terms[i].field, fl);
    p += fl;
    p = put_varint(p, terms[i].len);
    memcpy(p, terms[i].term, terms[i].len);
    p += terms[i].len;
  }
}

int extsort_add(extsort *s, const void *key, size_t klen, const void *val, size_t vlen,
                const tern_term *terms, size_t nterms, uint64_t line) {
  size_t need = record_size(klen, vlen, terms, nterms, line);
  if (need > UINT32_MAX) return -E2BIG;
  if (s->used + need > s->mem_limit || s->n >= s->ent_limit) TERN_CLI_TRY(spill(s));
  if (need > s->mem_limit) { /* larger than the whole buffer: a run of its own */
    uint8_t *rec = malloc(need);
    if (!rec) return -ENOMEM;
    put_record(rec, need, key, klen, val, vlen, terms, nterms, line);
    int fd;
    int rc = new_run(s, &fd);
    if (rc == 0) rc = keep_run(s, fd, write_all(fd, rec, need));
    free(rec);
    if (rc == 0) s->count++;
    return rc;
  }
  put_record(s->mem + s->used, need, key, klen, val, vlen, terms, nterms, line);
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
    release(s->scratch, s->ent_limit * sizeof *s->scratch); /* not needed any more */
    s->scratch = NULL;
    s->in_memory = 1;
    return 0;
  }
  int rc = spill(s);
  if (rc) return rc;
  release_run(s);
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
  uint64_t v;
  const uint8_t *p = get_varint(rec + 4, &v);
  d->klen = (size_t)v;
  d->key = p;
  p = get_varint(p + d->klen, &v);
  d->vlen = (size_t)v;
  d->val = p;
  p = get_varint(p + d->vlen, &d->line);
  p = get_varint(p, &v);
  size_t nt = (size_t)v;
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
    p = get_varint(p, &v);
    uint8_t *field = (uint8_t *)p;
    p += v;
    uint8_t *after = (uint8_t *)p;
    p = get_varint(p, &v);
    s->terms[i] = (tern_term){(const char *)field, p, (size_t)v};
    *after = 0;
    p += v;
  }
  d->terms = s->terms;
  d->nterms = nt;
  return 1;
}

int extsort_next(extsort *s, ext_doc *d) {
  if (s->in_memory) {
    if (s->next >= s->n) return 0;
    /* records sit in input order: fetch the ones sorted next ahead */
    if (s->next + PREFETCH < s->n) __builtin_prefetch(s->mem + s->ents[s->next + PREFETCH].off);
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

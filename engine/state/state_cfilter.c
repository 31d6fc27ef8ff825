/* SPDX-License-Identifier: MIT */
/*
 * state_cfilter.c — the combined filter: over the keys of a state's slots
 * probed in turn, a split-block Bloom filter (codec/filter.h) and a table
 * that names, for a key, the slots that may hold it (issue 21 item 6; the
 * table's layout and the get's side: cfilter.h).  A get asks the Bloom
 * filter (one line: an absent key ends there), then reads the key's one
 * bucket and probes the named slots' blocks, newest first: never the
 * other segments' filter lines, whatever their number.
 *
 * Why it is never wrong: both hold every unique key of every slot they
 * cover (live or deleted: a superset is fine), a bucket that could not
 * take an entry says so (the get then probes every slot in turn, as
 * without the table), and a segment's keys never change, so the slots it
 * names for a key are a superset of the covered slots holding it.  It is
 * used by a state only when it covers every slot that state probes in
 * turn (by segment id); a state made after a merge or a flush (a slot it
 * does not cover) goes without it.  Entries name a covered segment by its
 * place in the table's list; each state holding the table keeps its own
 * map from that place to its slot (a covered segment it lacks: none).
 *
 * With them, over more than TERN_CF_LINES_MAX segments, a router
 * (router.h) over the same keys names the one covered segment of a key
 * that one segment holds, from three cells in L2: a get asks it before
 * the table, which answers its escapes.
 *
 * Cost (measured: docs/benchmarks/HISTORY.md, "2026-12-02, afternoon"):
 * the keys of the covered segments read once, in key order, from their
 * terms blocks, hashed and placed, about 50-60 ms per million keys, the
 * read of the blocks most of it, and the router peeled, about 85 ms more;
 * memory about 47 bits per key (the table 32, 4 MiB per million in huge
 * pages where the kernel gives them; the Bloom filter 10, 1.25 MiB; the
 * router 4.5 for 4 segments, 9 for more, none for fewer), plus 10 bytes a
 * key while it is built and about 46 more while the router is (router.c).
 * So it is never built on the commit path: where a state is made from the
 * catalog (the first state after tern_open, a reload after another
 * process's commit) for at least TERN_CFILTER_MIN slots; for fewer (from
 * TERN_CFILTER_MIN_WORKER: an incremental index's 3 or 4 segments) by the
 * handle's builder thread, in the background (cfilter_builder.c); and by
 * the background worker of a writing process once its flushes and merges
 * are done (engine/maint/combined.c), installed as a state that changes
 * nothing else.  At most TERN_CFILTER_MAX_SLOTS segments, only when their
 * terms files are mapped and in the page cache.  Over more than
 * TERN_CFILTER_TABLE_KEYS keys, built in the background only and without
 * the table (4 bytes a key): the Bloom filter and, up to
 * TERN_CFILTER_ROUTER_KEYS, the router (a key in several segments, its
 * escape, then reads the segments' lines); above, up to
 * TERN_CFILTER_MAX_KEYS, the Bloom filter alone (the router's build takes
 * about 54 bytes a key with the array of hashes).  Any failure while
 * building (memory, a damaged block) leaves the state without it: still
 * right, the gets then meet the damage themselves.
 */
#include "engine/state/index.h"
#include "engine/util/zalloc.h"

#include "codec/segment.h"
#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

tern_cfilter_tuning tern_cfilter_test_tuning;

struct tern_cfilter {
  unsigned refs; /* under idx->mu, as the states holding it */
  tern_filter *bloom; /* over the same keys: asked first */
  uint8_t *buckets;
  uint32_t nbuckets, slot_bits;
  tern_router router; /* covered segment of a key (router.h); cells NULL: none */
  size_t ncovered;
  uint8_t (*segids)[TERN_SEGID_SIZE]; /* covered segment k: the entries' k */
};

/* The slots st probes in turn: its overlap list, or all of them. */
static size_t in_turn(const tern_state *st, const uint32_t **ids) {
  *ids = st->ndisjoint ? st->overlap : NULL;
  return st->ndisjoint ? st->noverlap : st->nslots;
}

/* The place of segid in cf's list, or TERN_CFILTER_NONE. */
static uint32_t covered_index(const tern_cfilter *cf, const uint8_t *segid) {
  for (size_t k = 0; k < cf->ncovered; k++)
    if (!memcmp(cf->segids[k], segid, TERN_SEGID_SIZE)) return (uint32_t)k;
  return TERN_CFILTER_NONE;
}

/* 1 when cf covers every slot st probes in turn. */
static int covers_state(const tern_cfilter *cf, const tern_state *st) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids);
  for (size_t k = 0; k < n; k++)
    if (covered_index(cf, st->slots[ids ? ids[k] : k].segid) == TERN_CFILTER_NONE) return 0;
  return 1;
}

static void cfilter_free(tern_cfilter *cf) {
  tern_filter_free(cf->bloom);
  tern_router_free(&cf->router);
  free(cf->buckets);
  free(cf->segids);
  free(cf);
}

void tern_state_cfilter_put(tern_state *st) {
  tern_cfilter *cf = st->cf;
  free((void *)st->cf_view.slot_of);
  st->cf = NULL;
  st->cf_view = (tern_cfilter_view){0};
  assert(!cf || cf->refs > 0);
  if (cf && --cf->refs == 0) cfilter_free(cf);
}

/* Gives cf to st (one more holder) with st's map of covered segments to
 * its slots; 0 without memory for the map (st then goes without). */
static int hold(tern_state *st, tern_cfilter *cf) {
  uint32_t *slot_of = malloc(cf->ncovered * sizeof *slot_of);
  if (!slot_of) return 0;
  for (size_t k = 0; k < cf->ncovered; k++)
    slot_of[k] = TERN_CFILTER_NONE;
  for (size_t i = 0; i < st->nslots; i++) {
    uint32_t k = covered_index(cf, st->slots[i].segid);
    if (k != TERN_CFILTER_NONE) slot_of[k] = (uint32_t)i;
  }
  st->cf = cf;
  st->cf_view = (tern_cfilter_view){tern_filter_view_of(cf->bloom), cf->buckets, cf->nbuckets,
                                    cf->slot_bits, slot_of,
                                    cf->router.cells ? &cf->router : NULL, (uint32_t)cf->ncovered};
  atomic_store_explicit(&st->cf_order,
                        tern_cfilter_test_tuning.order == 2 ? TERN_CF_ORDER_MAX : 0,
                        memory_order_relaxed);
  cf->refs++;
  return 1;
}

int tern_state_cfilter_inherit(tern_state *st, const tern_state *from) {
  if (st->cf || !from || !from->cf || !covers_state(from->cf, st)) return 0;
  assert(from->cf->refs > 0);
  if (!hold(st, from->cf)) return 0;
  if (!tern_cfilter_test_tuning.order) /* the gets go on as they were */
    atomic_store_explicit(&st->cf_order,
                          atomic_load_explicit(&from->cf_order, memory_order_relaxed),
                          memory_order_relaxed);
  return 1;
}

/* Where hash_keys puts the keys' hashes: every one in h[0..cap), or,
 * with a Bloom filter's body, a chunk at a time into that filter. */
typedef struct key_sink {
  uint64_t *h;
  size_t n, cap;       /* hashes in h, and its room */
  size_t total, bound; /* keys so far, and the most the slots hold (their max_doc) */
  uint8_t *body;       /* NULL: keep every hash (cap == bound) */
} key_sink;

/* Puts the hash of every unique key of seg into k; every 4096 keys, gives
 * up (TERN_ESTOPPED) once *stop is set. */
static int hash_keys(const tern_seg *seg, key_sink *k, const atomic_int *stop) {
  const tern_seg_field *f = tern_seg_unique_field(seg);
  if (!f) return TERN_EINVAL;
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  int rc = tern_seg_first_term(seg, f, &c, &e);
  for (; rc == TERN_OK; rc = tern_seg_next_term(seg, &c, &e)) {
    if (k->total == k->bound) {
      rc = TERN_ECORRUPT; /* more keys than max_doc: no filter */
      break;
    }
    if ((k->total & 4095) == 0 && stop && atomic_load_explicit(stop, memory_order_relaxed)) {
      rc = TERN_ESTOPPED;
      break;
    }
    if (k->n == k->cap) { /* only with a body: cap == bound otherwise */
      assert(k->body);
      tern_filter_add(k->body, k->h, k->n);
      k->n = 0;
    }
    k->h[k->n++] = tern_filter_hash(e.term, e.len);
    k->total++;
  }
  tern_seg_cursor_release(&c);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}

/* The keys' bound, when st probes at least min_slots in turn, holding at
 * most max_keys keys, and is worth a filter (else 0). */
static size_t eligible_keys(const tern_state *st, size_t min_slots, size_t max_keys) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids), keys = 0;
  if (n < min_slots || n > TERN_CFILTER_MAX_SLOTS) return 0;
  for (size_t k = 0; k < n; k++) {
    const tern_segref *r = st->slots[ids ? ids[k] : k].ref;
    keys += r->max_doc;
    if (keys > max_keys || !tern_seg_terms_resident(r->seg, 1, UINT64_MAX)) return 0;
  }
  return keys;
}

/* Keys above which a combined filter has no table (its Bloom filter and
 * router), and above which no router either. */
static size_t table_keys(void) {
  size_t t = tern_cfilter_test_tuning.table_keys;
  return t ? t : TERN_CFILTER_TABLE_KEYS;
}
static size_t router_keys(void) {
  size_t t = tern_cfilter_test_tuning.router_keys;
  return t ? t : TERN_CFILTER_ROUTER_KEYS;
}

/* Bits that number covered segments 0..n-1 (at least the test's). */
static uint32_t slot_bits_for(size_t n) {
  uint32_t b = 0;
  while (((size_t)1 << b) < n)
    b++;
  uint32_t least = tern_cfilter_test_tuning.slot_bits_min;
  return least > b && least <= 14 ? least : b;
}

/* Zeroed memory for a table of `bytes`: from 2 MiB, in huge pages where
 * the kernel gives them (MADV_HUGEPAGE; a hint), so that a get's one
 * line in a table of millions of keys costs no TLB miss of its own. */
#define HUGE_PAGE ((size_t)2 << 20)
static uint8_t *table_alloc(size_t bytes) {
  size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : TERN_CFILTER_BUCKET;
  size_t size = (bytes + align - 1) / align * align;
  uint8_t *p = aligned_alloc(align, size);
  if (!p) return NULL;
#ifdef MADV_HUGEPAGE
  if (align == HUGE_PAGE) (void)madvise(p, size, MADV_HUGEPAGE);
#endif
  memset(p, 0, size);
  return p;
}

/* Puts the entry of hash h, covered segment k, into its bucket (count:
 * the bucket's entries so far), or marks the bucket overflowed. */
static void place(tern_cfilter *cf, uint8_t *count, uint64_t h, uint32_t k) {
  tern_cfilter_view v = {{0}, cf->buckets, cf->nbuckets, cf->slot_bits, NULL, NULL, 0};
  uint8_t *b = (uint8_t *)tern_cfilter_bucket(&v, h);
  size_t at = (size_t)(b - cf->buckets) / TERN_CFILTER_BUCKET;
  if (count[at] == TERN_CFILTER_ENTRIES) {
    tern_store16(b, TERN_CFILTER_OVERFLOWED);
    return;
  }
  uint32_t e = tern_cfilter_fp(h, 16 - cf->slot_bits) << cf->slot_bits | k;
  assert(e != 0 && e != TERN_CFILTER_OVERFLOWED);
  tern_store16(b + 2 * (1u + count[at]++), (uint16_t)e);
}

/* The table of hashes h[0..n), the keys of covered segment k being
 * h[start[k]..start[k + 1]), into cf. */
static int fill_table(tern_cfilter *cf, const uint64_t *h, size_t n, const size_t *start) {
  uint32_t load = tern_cfilter_test_tuning.load ? tern_cfilter_test_tuning.load : TERN_CFILTER_LOAD;
  size_t nb = n / load + 1;
  if (nb > UINT32_MAX) return TERN_EINVAL;
  cf->nbuckets = (uint32_t)nb;
  cf->buckets = table_alloc(nb * TERN_CFILTER_BUCKET);
  uint8_t *count = tern_calloc_written(nb, 1); /* incremented */
  if (!cf->buckets || !count) {
    free(count);
    return TERN_ENOMEM;
  }
  for (size_t k = 0; k < cf->ncovered; k++)
    for (size_t i = start[k]; i < start[k + 1]; i++)
      place(cf, count, h[i], (uint32_t)k);
  free(count);
  return TERN_OK;
}

/* The Bloom filter of the hashes h[0..n), in cf. */
static int make_bloom(tern_cfilter *cf, const uint64_t *h, size_t n) {
  size_t len = tern_filter_body_size(n, TERN_FILTER_BITS_PER_KEY);
  uint8_t *body = len ? malloc(len) : NULL;
  int rc = body ? tern_filter_build(body, len, h, n, TERN_FILTER_BITS_PER_KEY) : TERN_ENOMEM;
  if (rc == TERN_OK) rc = tern_filter_load(&cf->bloom, body, len, "combined filter");
  free(body);
  return rc;
}

/* 1 when a filter over ncovered segments gets a router: more than a get
 * reads the lines of (TERN_CF_LINES_MAX: with so few, their lines did as
 * well for present keys and better for absent ones, measured:
 * docs/benchmarks/HISTORY.md, "segments"), at most 255. */
static int wants_router(size_t ncovered) {
  return tern_router_bits_for(ncovered) && ncovered > TERN_CF_LINES_MAX &&
         !tern_cfilter_test_tuning.no_router;
}

/* The router of the hashes h[0..n) to their covered segments (h's keys
 * of segment k being h[start[k]..start[k + 1])), in cf, when it wants
 * one; h is reordered (the router is made last: nothing reads h after
 * it).  Without memory, none: the table names the segments then, or,
 * without a table, the segments' lines. */
static int make_router(tern_cfilter *cf, uint64_t *h, size_t n, const size_t *start,
                       const atomic_int *stop) {
  if (!wants_router(cf->ncovered)) return TERN_OK;
  uint8_t *value = malloc(n ? n : 1);
  int rc = value ? TERN_OK : TERN_ENOMEM;
  if (rc == TERN_OK) {
    for (size_t k = 0; k < cf->ncovered; k++)
      memset(value + start[k], (int)k, start[k + 1] - start[k]);
    rc = tern_router_build(&cf->router, h, value, n, tern_router_bits_for(cf->ncovered), stop);
  }
  free(value);
  if (rc == TERN_ESTOPPED) return rc;
  if (rc != TERN_OK) tern_clear_error(); /* without it: the table, or the lines */
  return TERN_OK;
}

/* A combined filter covering the segments st probes in turn, with
 * nothing built yet. */
static tern_cfilter *cfilter_new(const tern_state *st) {
  const uint32_t *ids;
  size_t nc = in_turn(st, &ids);
  tern_cfilter *cf = calloc(1, sizeof *cf);
  if (!cf) return NULL;
  cf->ncovered = nc;
  cf->slot_bits = slot_bits_for(nc);
  if (!(cf->segids = malloc(nc * TERN_SEGID_SIZE))) {
    free(cf);
    return NULL;
  }
  for (size_t k = 0; k < nc; k++)
    memcpy(cf->segids[k], st->slots[ids ? ids[k] : k].segid, TERN_SEGID_SIZE);
  return cf;
}

/* The Bloom filter, table (with_table) and router over the hashes
 * h[0..n) of the segments st probes in turn (h reordered). */
static int cfilter_make(const tern_state *st, uint64_t *h, size_t n, const size_t *start,
                        int with_table, const atomic_int *stop, tern_cfilter **out) {
  tern_cfilter *cf = cfilter_new(st);
  if (!cf) return TERN_ENOMEM;
  int rc = make_bloom(cf, h, n);
  if (rc == TERN_OK && with_table) rc = fill_table(cf, h, n, start);
  if (rc == TERN_OK) rc = make_router(cf, h, n, start, stop);
  if (rc != TERN_OK) {
    cfilter_free(cf);
    return rc;
  }
  *out = cf;
  return TERN_OK;
}

/* The combined filter over st's slots probed in turn, whose keys are at
 * most `bound`, with its table (with_table) and router: every hash kept
 * for them. */
static int make_whole(const tern_state *st, size_t bound, int with_table, const atomic_int *stop,
                      tern_cfilter **out) {
  const uint32_t *ids;
  size_t nc = in_turn(st, &ids);
  key_sink k = {malloc(bound * sizeof(uint64_t)), 0, bound, 0, bound, NULL};
  size_t *start = malloc((nc + 1) * sizeof *start);
  int rc = k.h && start ? TERN_OK : TERN_ENOMEM;
  for (size_t i = 0; rc == TERN_OK && i < nc; i++) {
    start[i] = k.n;
    rc = hash_keys(st->slots[ids ? ids[i] : i].ref->seg, &k, stop);
  }
  if (rc == TERN_OK) {
    start[nc] = k.n;
    rc = cfilter_make(st, k.h, k.n, start, with_table, stop, out);
  }
  free(k.h);
  free(start);
  return rc;
}

/* The combined filter over more keys than a router is built for (or
 * with no use for one): its Bloom filter alone, the keys hashed into it a
 * chunk at a time (memory: the filter, 10 bits a key, twice while it is
 * loaded; no array of every hash).  Absent keys then cost its one line
 * whatever the number of segments; present keys read the segments' own
 * lines, as without a combined filter. */
enum { SINK_CHUNK = 4096 };
static int make_bloom_alone(const tern_state *st, size_t bound, const atomic_int *stop,
                            tern_cfilter **out) {
  const uint32_t *ids;
  size_t nc = in_turn(st, &ids), len = tern_filter_body_size(bound, TERN_FILTER_BITS_PER_KEY);
  key_sink k = {malloc(SINK_CHUNK * sizeof(uint64_t)), 0, SINK_CHUNK, 0, bound, NULL};
  k.body = len ? malloc(len) : NULL;
  int rc = k.h && k.body ? tern_filter_init(k.body, len, bound, TERN_FILTER_BITS_PER_KEY)
                         : TERN_ENOMEM;
  for (size_t i = 0; rc == TERN_OK && i < nc; i++)
    rc = hash_keys(st->slots[ids ? ids[i] : i].ref->seg, &k, stop);
  tern_cfilter *cf = NULL;
  if (rc == TERN_OK) {
    tern_filter_add(k.body, k.h, k.n);
    cf = cfilter_new(st);
    rc = cf ? tern_filter_load(&cf->bloom, k.body, len, "combined filter") : TERN_ENOMEM;
  }
  free(k.h);
  free(k.body);
  if (rc != TERN_OK) {
    if (cf) cfilter_free(cf);
    return rc;
  }
  *out = cf;
  return TERN_OK;
}

/* The combined filter over st's slots probed in turn when at least
 * min_slots, of at most max_keys keys: whole up to table_keys(), without
 * its table up to router_keys() (when a router is wanted), else its
 * Bloom filter alone. */
static int make_filter(const tern_state *st, size_t min_slots, size_t max_keys,
                       const atomic_int *stop, tern_cfilter **out) {
  *out = NULL;
  size_t bound = eligible_keys(st, min_slots, max_keys);
  if (!bound) return TERN_OK;
  if (bound <= table_keys()) return make_whole(st, bound, 1, stop, out);
  const uint32_t *ids;
  if (bound <= router_keys() && wants_router(in_turn(st, &ids)))
    return make_whole(st, bound, 0, stop, out);
  return make_bloom_alone(st, bound, stop, out);
}

void tern_state_cfilter_build(tern_state *st) {
  if (st->cf) return;
  tern_cfilter *cf = NULL;
  /* at open, only what is quick to make: beyond the table's keys, the
   * builder thread (tern_state_cfilter_wanted) */
  if (make_filter(st, TERN_CFILTER_MIN, table_keys(), NULL, &cf) != TERN_OK) {
    tern_clear_error(); /* without it: still right (above) */
    return;
  }
  if (cf && !hold(st, cf)) cfilter_free(cf);
}

int tern_cfilter_make(const tern_state *st, const atomic_int *stop, tern_cfilter **out) {
  return make_filter(st, TERN_CFILTER_MIN_WORKER, TERN_CFILTER_MAX_KEYS, stop, out);
}

int tern_state_cfilter_wanted(const tern_state *st) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids);
  return !st->cf && n >= TERN_CFILTER_MIN_WORKER && n <= TERN_CFILTER_MAX_SLOTS;
}

int tern_state_cfilter_adopt(tern_state *st, tern_cfilter **cf) {
  if (st->cf || !*cf || !covers_state(*cf, st)) return 0;
  assert((*cf)->refs == 0);
  if (!hold(st, *cf)) return 0;
  *cf = NULL;
  return 1;
}

void tern_cfilter_discard(tern_cfilter *cf) {
  assert(!cf || cf->refs == 0);
  if (cf) cfilter_free(cf);
}

size_t tern_cfilter_memory(const tern_cfilter *cf) {
  return cf ? (size_t)cf->nbuckets * TERN_CFILTER_BUCKET + tern_filter_memory(cf->bloom) +
                  cf->router.bytes
            : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * batch.c — tern_get_batch: many keys looked up at once.
 *
 * Warm (every segment's terms in the page cache, or keys given sorted):
 * the keys are looked up in the order given — with many lookups in
 * flight when every segment is mapped (batch_amac.c), else one by one,
 * each answered at once.
 *
 * Cold: the keys are sorted, then each segment (newest first) takes the
 * keys not answered yet in key order.  For each it tests the range and
 * the filter and finds in the resident terms index the block that would
 * hold it, walking the index's groups rather than decoding them (no I/O);
 * the blocks not read yet by this process are read through a read queue
 * (codec/io.h, tern_rqueue; the index's kept one, queue_spare.h) with up
 * to read_depth reads in flight, in file order, sent as soon as no later
 * key can join them — the device reads while the rest are planned — and
 * each block's keys are resolved as its read completes, in the block
 * itself; values in .val not read yet likewise, after the segment's
 * blocks.  A disk serves several reads at once; one read at a time uses
 * a fraction of it (docs/ARCHITECTURE.md, "Cold batches").
 *
 * Sequential when cheaper: needed blocks close together in the file are
 * read as one run — a gap of up to RUN_GAP blocks is read rather than
 * skipped (reading a few blocks in order costs less than another random
 * read's latency), up to RUN_MAX blocks a read — so a batch that needs
 * most of a file reads it in large sequential reads, one that needs a few
 * scattered blocks reads just those.  The constants are measured
 * (docs/ARCHITECTURE.md, "Cold batches").
 */
#include "engine/read/batch_load.h"
#include "engine/util/counters.h"
#include "engine/util/errwrap.h"
#include "engine/state/index.h"
#include "engine/read/batch_amac.h"
#include "engine/read/queue_spare.h"

#include "codec/io.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* Runs: blocks are read together when the gap between two needed ones is
 * at most RUN_GAP blocks, and at most RUN_MAX blocks (512 KiB) a read. */
#define RUN_GAP 2u
#define RUN_MAX 128u

typedef struct batch_item {
  tern_keyref key; /* aux: input index */
} batch_item;

typedef struct batch_res {
  const uint8_t *val; /* NULL: not found yet */
  size_t vlen;
} batch_res;

/* A found key whose value in .val waits for the queue. */
typedef struct pending_val {
  uint64_t off;
  uint32_t len, aux;
} pending_val;

typedef struct batch {
  tern_snapshot *s;
  const batch_item *items;
  const uint32_t *order; /* items in key order */
  size_t n;
  batch_res *res;
  tern_arena *vals;
  tern_seg_cursor *c;
  tern_ti_walk *walk; /* the slot's terms index, walked in key order */
  unsigned depth;   /* read_depth: 0, values read at once */
  pending_val *pv;  /* this slot's values to read */
  size_t npv, pv_cap;
  /* With a range map: map_slot[j], the one slot of the map key j (in key
   * order) can be in (UINT32_MAX: none); which slots are the map's, the
   * state's in_map.  NULL without a map. */
  uint32_t *map_slot;
} batch;

static int defer_value(batch *b, uint64_t off, uint32_t len, uint32_t aux) {
  if (b->npv == b->pv_cap) {
    size_t cap = b->pv_cap ? 2 * b->pv_cap : 64;
    pending_val *p = realloc(b->pv, cap * sizeof *p);
    if (!p) return tern_fail(TERN_ENOMEM, "batch: out of memory");
    b->pv = p;
    b->pv_cap = cap;
  }
  b->pv[b->npv++] = (pending_val){off, len, aux};
  return TERN_OK;
}

/* Key `j` (in key order) looked up in slot sl, its value copied when
 * found: in block gb when the cursor holds it (a cold run's, adopted:
 * the terms index is not asked again), else the ordinary way. */
static int resolve_key(batch *b, const tern_slot *sl, size_t j, uint64_t gb, int filter) {
  const batch_item *it = &b->items[b->order[j]];
  tern_term_entry e;
  uint32_t doc;
  tern_slice v;
  int rc;
  if (gb != UINT64_MAX) {
    tern_seg_probe p;
    TERN_TRY(tern_seg_probe_init(&p, it->key.p, it->key.len));
    rc = tern_slot_find_in(sl, &p, filter, gb, b->c, &e, &doc);
  } else {
    rc = tern_slot_find(sl, it->key.p, it->key.len, b->c, &e, &doc);
  }
  if (rc == TERN_NOTFOUND) return TERN_OK;
  if (rc != TERN_OK) return rc;
  uint64_t off;
  uint32_t len;
  if (b->depth && (rc = tern_seg_value_span(sl->ref->seg, &e, &off, &len)) != 0)
    return rc < 0 ? rc : defer_value(b, off, len, it->key.aux);
  rc = tern_seg_value(sl->ref->seg, &e, b->c, &v);
  if (rc != TERN_OK) return rc;
  uint8_t *copy = tern_arena_alloc(b->vals, v.len ? v.len : 1);
  if (!copy) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  if (v.len) memcpy(copy, v.data, v.len);
  b->res[it->key.aux] = (batch_res){copy, v.len};
  return TERN_OK;
}

/* A key the segment may hold: its block (global number) and its place in
 * key order. */
typedef struct want {
  uint64_t gb;
  tern_ti_block info; /* the block's ordinals */
  uint32_t j;
  uint32_t run; /* index of the run that reads its block, UINT32_MAX: cached */
  int filter;   /* the gate's answer */
} want;

/* One read of blocks [first, first + n), for wants [lo, hi). */
typedef struct run {
  uint64_t first, n;
  uint32_t lo, hi;
  uint8_t *buf;
} run;

/* Key j (in key order) if slot sl may hold it: its block into w[*nw]. */
static int plan_key(batch *b, const tern_slot *sl, size_t j, want *w, size_t *nw) {
  /* a slot of the range map: only the keys the map sends it */
  uint32_t si = (uint32_t)(sl - b->s->st->slots);
  if (b->map_slot && b->s->st->in_map[si] && b->map_slot[j] != si) return TERN_OK;
  const batch_item *it = &b->items[b->order[j]];
  if (b->res[it->key.aux].val) return TERN_OK;
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_init(&p, it->key.p, it->key.len));
  int filter = tern_seg_gate_pass(&sl->gate, &p);
  if (filter <= 0) return filter;
  uint64_t gb;
  tern_ti_block info;
  int rc = tern_seg_pk_block(sl->ref->seg, &p, b->walk, &gb, &info);
  if (rc == TERN_NOTFOUND) return TERN_OK;
  if (rc != TERN_OK) return rc;
  w[(*nw)++] = (want){gb, info, (uint32_t)j, UINT32_MAX, filter};
  return TERN_OK;
}

/* A slot's cold blocks, grouped into runs (in block order) and read
 * through a queue: runs [0, sent) are submitted, all but the last of
 * [0, nr) are closed (no later want can join them). */
typedef struct slot_reads {
  run *r;
  size_t nr, sent, flushed; /* runs sent to the device (tern_rqueue_flush) */
  tern_rqueue *q;  /* taken from idx when the first run is sent */
  tern_index *idx;
  unsigned depth; /* 0: no queue, every block read at once */
} slot_reads;

/* Places want k (blocks ascending) in a run unless its block is checked
 * by this process already (warm: w[k].run stays UINT32_MAX). */
static void place_want(const tern_seg *seg, want *w, size_t k, slot_reads *rd) {
  uint64_t gb = w[k].gb;
  run *cur = rd->nr ? &rd->r[rd->nr - 1] : NULL;
  if (cur && gb < cur->first + cur->n) { /* a block this run reads */
    w[k].run = (uint32_t)(rd->nr - 1);
    cur->hi = (uint32_t)k + 1;
    return;
  }
  if (tern_rfile_page_checked(tern_seg_terms_file(seg), tern_seg_block_offset(gb))) return;
  if (cur && gb - (cur->first + cur->n) <= RUN_GAP && gb + 1 - cur->first <= RUN_MAX) {
    cur->n = gb + 1 - cur->first;
    cur->hi = (uint32_t)k + 1;
  } else {
    rd->r[rd->nr++] = (run){gb, 1, (uint32_t)k, (uint32_t)k + 1, NULL};
  }
  w[k].run = (uint32_t)(rd->nr - 1);
}

static int submit_run(tern_rqueue *q, const tern_seg *seg, run *r, size_t i) {
  size_t len = (size_t)r->n * TERN_BLOCK_SIZE;
  r->buf = malloc(len);
  if (!r->buf) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  return tern_rqueue_submit(q, tern_seg_terms_file(seg), tern_seg_block_offset(r->first), len,
                            r->buf, i);
}

/* Submits runs [sent, upto) while the queue has room (opening it first). */
static int send_runs(const tern_seg *seg, slot_reads *rd, size_t upto) {
  if (rd->sent >= upto) return TERN_OK;
  if (!rd->q) TERN_TRY(tern_queue_take(rd->idx, rd->depth, &rd->q));
  int rc = TERN_OK;
  while (rc == TERN_OK && rd->sent < upto && tern_rqueue_inflight(rd->q) < tern_rqueue_depth(rd->q))
    rc = submit_run(rd->q, seg, &rd->r[rd->sent], rd->sent), rd->sent++;
  return rc;
}

/* The keys of run r, each in its block from the run's buffer. */
static int resolve_run(batch *b, const tern_slot *sl, const want *w, const run *r) {
  const tern_seg *seg = sl->ref->seg;
  uint64_t held = UINT64_MAX;
  for (uint32_t k = r->lo; k < r->hi; k++) {
    if (w[k].run == UINT32_MAX) continue;
    if (w[k].gb != held) {
      held = w[k].gb;
      TERN_TRY(tern_seg_cursor_adopt(seg, held, &w[k].info,
                                     r->buf + (held - r->first) * TERN_BLOCK_SIZE, b->c));
    }
    TERN_TRY(resolve_key(b, sl, w[k].j, held, w[k].filter));
  }
  return TERN_OK;
}

/* The runs not read yet, each resolved as it lands; then the queue and
 * the buffers go, whatever rc (the reads in flight waited for first). */
static int finish_runs(batch *b, const tern_slot *sl, const want *w, slot_reads *rd, int rc) {
  const tern_seg *seg = sl->ref->seg;
  while (rc == TERN_OK && rd->nr) {
    rc = send_runs(seg, rd, rd->nr);
    if (rc != TERN_OK) break;
    uint64_t tag;
    rc = tern_rqueue_wait(rd->q, &tag);
    if (rc == TERN_NOTFOUND) {
      rc = TERN_OK;
      break; /* all read */
    }
    if (rc == TERN_OK) rc = resolve_run(b, sl, w, &rd->r[tag]);
    free(rd->r[tag].buf);
    rd->r[tag].buf = NULL;
  }
  tern_queue_give(rd->idx, rd->q); /* closed, waiting for the reads in flight, unless idle */
  for (size_t i = 0; i < rd->sent; i++) free(rd->r[i].buf);
  return rc;
}

/* The deferred values of a slot, read through the queue: pages of values
 * close together in one read (the same rule as blocks), each value copied
 * out as its read lands.  Values come in key order, which is .val's. */
typedef struct vrun {
  uint64_t start, end; /* bytes [start, end): whole pages, or to the end of the file */
  size_t lo, hi;       /* pending values [lo, hi) */
  uint8_t *buf;
} vrun;

static int cmp_pv(const void *a, const void *b) {
  const pending_val *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

static size_t plan_value_runs(batch *b, uint64_t size, vrun *r) {
  qsort(b->pv, b->npv, sizeof *b->pv, cmp_pv);
  size_t nr = 0;
  for (size_t k = 0; k < b->npv; k++) {
    uint64_t s = b->pv[k].off / TERN_IO_PAGE * TERN_IO_PAGE;
    uint64_t e = (b->pv[k].off + b->pv[k].len + TERN_IO_PAGE - 1) / TERN_IO_PAGE * TERN_IO_PAGE;
    if (e > size) e = size;
    vrun *cur = nr ? &r[nr - 1] : NULL;
    if (cur && s <= cur->end + (uint64_t)RUN_GAP * TERN_IO_PAGE &&
        (e > cur->end ? e : cur->end) - cur->start <= (uint64_t)RUN_MAX * TERN_IO_PAGE) {
      if (e > cur->end) cur->end = e;
      cur->hi = k + 1;
    } else {
      r[nr++] = (vrun){s, e, k, k + 1, NULL};
    }
  }
  return nr;
}

static int copy_values(batch *b, const vrun *r) {
  for (size_t k = r->lo; k < r->hi; k++) {
    const pending_val *p = &b->pv[k];
    uint8_t *copy = tern_arena_alloc(b->vals, p->len);
    if (!copy) return tern_fail(TERN_ENOMEM, "batch: out of memory");
    memcpy(copy, r->buf + (p->off - r->start), p->len);
    b->res[p->aux] = (batch_res){copy, p->len};
  }
  return TERN_OK;
}

static int read_values(batch *b, const tern_slot *sl) {
  tern_rfile *val = tern_seg_values_file(sl->ref->seg);
  vrun *r = malloc(b->npv * sizeof *r);
  if (!r) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  size_t nr = plan_value_runs(b, tern_rfile_size(val), r);
  tern_rqueue *q = NULL;
  int rc = tern_queue_take(b->s->idx, b->depth, &q);
  size_t next = 0;
  while (rc == TERN_OK) {
    while (rc == TERN_OK && next < nr && tern_rqueue_inflight(q) < tern_rqueue_depth(q)) {
      vrun *v = &r[next];
      v->buf = malloc((size_t)(v->end - v->start));
      rc = v->buf ? tern_rqueue_submit(q, val, v->start, (size_t)(v->end - v->start), v->buf, next)
                  : tern_fail(TERN_ENOMEM, "batch: out of memory");
      next++;
    }
    if (rc != TERN_OK) break;
    uint64_t tag;
    rc = tern_rqueue_wait(q, &tag);
    if (rc == TERN_NOTFOUND) {
      rc = TERN_OK;
      break;
    }
    if (rc == TERN_OK) rc = copy_values(b, &r[tag]);
    free(r[tag].buf);
    r[tag].buf = NULL;
  }
  tern_queue_give(b->s->idx, q);
  for (size_t i = 0; i < next; i++) free(r[i].buf);
  free(r);
  return rc;
}

/* Slot sl's share of the batch.  Its keys are planned in key order (the
 * filter, the terms index: a cold process decodes a terms-index group
 * for about every key, ~1.3 µs), and each run of cold blocks goes to the
 * queue as soon as no later key can join it, so that the device reads
 * while the rest are planned; then the warm keys (blocks in the page
 * cache and checked: no read to wait for), then the cold ones as their
 * reads land, then the values in .val. */
static int resolve_slot(batch *b, const tern_slot *sl, unsigned depth, want *w, run *r) {
  const tern_seg *seg = sl->ref->seg;
  slot_reads rd = {r, 0, 0, 0, NULL, b->s->idx, depth};
  size_t nw = 0;
  tern_seg_cursor_init(b->c); /* one cursor per segment: each block read once, in order */
  tern_terms_index_walk_init(b->walk);
  int rc = TERN_OK;
  for (size_t j = 0; rc == TERN_OK && j < b->n; j++) {
    size_t had = nw;
    rc = plan_key(b, sl, j, w, &nw);
    if (rc != TERN_OK || nw == had || !depth) continue;
    place_want(seg, w, nw - 1, &rd);
    if (rd.nr > 1) rc = send_runs(seg, &rd, rd.nr - 1); /* the closed ones */
    /* to the device after 1, 2, 4, 8 ... runs: the first read goes out at
     * once, and a system call (~15 µs on a virtual machine) serves ever
     * more reads */
    if (rc == TERN_OK && rd.sent >= 2 * rd.flushed + 1) {
      tern_rqueue_flush(rd.q);
      rd.flushed = rd.sent;
    }
  }
  for (size_t k = 0; rc == TERN_OK && k < nw; k++)
    if (w[k].run == UINT32_MAX) rc = resolve_key(b, sl, w[k].j, UINT64_MAX, 0);
  rc = finish_runs(b, sl, w, &rd, rc);
  /* before the next (older) slot: it must see these keys answered */
  if (rc == TERN_OK && b->npv) rc = read_values(b, sl);
  b->npv = 0;
  tern_seg_cursor_release(b->c);
  return rc;
}

/* Each key's one slot of the range map (b->map_slot), so that a slot of
 * the map plans only its own keys: over many range-disjoint segments a key
 * is hashed and gated in one, not in each. */
static int route_keys(batch *b) {
  const tern_state *st = b->s->st;
  b->map_slot = malloc(b->n * sizeof *b->map_slot);
  if (!b->map_slot) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  for (size_t j = 0; j < b->n; j++) {
    const batch_item *it = &b->items[b->order[j]];
    b->map_slot[j] = tern_state_map_slot(st, it->key.p, it->key.len);
  }
  return TERN_OK;
}

static int batch_resolve(batch *b) {
  static const uint8_t empty = 0;
  tern_snapshot *s = b->s;
  for (size_t j = 0; j < b->n; j++) {
    const batch_item *it = &b->items[b->order[j]];
    ptrdiff_t i = tern_memseg_find(s->buf, it->key.p, it->key.len);
    if (i < 0) continue;
    tern_slice v;
    TERN_TRY(tern_memseg_value(s->buf, (size_t)i, &v));
    b->res[it->key.aux] = (batch_res){v.len ? v.data : &empty, v.len};
  }
  want *w = malloc(b->n * sizeof *w);
  run *r = malloc(b->n * sizeof *r);
  b->c = malloc(sizeof *b->c);
  b->walk = malloc(sizeof *b->walk);
  int rc = w && r && b->c && b->walk ? TERN_OK : tern_fail(TERN_ENOMEM, "batch: out of memory");
  unsigned depth = s->idx->opts.read_depth;
  b->depth = depth;
  if (rc == TERN_OK && s->st->ndisjoint) rc = route_keys(b);
  for (size_t si = s->st->nslots; rc == TERN_OK && si-- > 0;)
    rc = resolve_slot(b, &s->st->slots[si], depth, w, r);
  free(b->map_slot);
  free(b->walk);
  free(b->c);
  free(b->pv);
  free(w);
  free(r);
  return rc;
}

/* Sorting a batch pays for itself only by the reads it saves: when every
 * segment's terms are in the page cache (or the keys come sorted), the
 * keys are looked up in the order given and answered at once — no sort,
 * no copies, no scattered bookkeeping. */
static int batch_in_order_pays(const tern_snapshot *s, const tern_slice *keys, size_t n) {
  int sorted = 1;
  for (size_t i = 1; sorted && i < n; i++) {
    size_t a = keys[i - 1].len, b = keys[i].len, m = a < b ? a : b;
    int c = memcmp(keys[i - 1].data, keys[i].data, m);
    sorted = c < 0 || (c == 0 && a < b);
  }
  /* Sorted keys go in order unless cold: in order, one read at a time,
   * they would wait for each block instead of queueing them.  Asking
   * costs a mincore byte per page: only for a batch of at least one key
   * per 64 pages (a smaller one goes in order, as unsorted keys never
   * would, since they would pay a sort). */
  if (sorted) {
    if (s->idx->opts.read_depth == 0) return 1;
    for (size_t si = 0; si < s->st->nslots; si++)
      if (tern_seg_nblocks(s->st->slots[si].ref->seg) + 1 > (uint64_t)n * 64u) return 1;
    for (size_t si = 0; si < s->st->nslots; si++)
      if (!tern_seg_terms_resident(s->st->slots[si].ref->seg, n, UINT64_MAX)) return 0;
    return 1;
  }
  /* mincore costs a byte per page of the terms file: asked only once the
   * keys of this batch and the ones before it that did not ask pay for it
   * at 64 pages a key (a small batch sorts cheaply), and the answer serves
   * as many keys as the file has pages.  64 pages a key: a batch of 1,024
   * asks about a 10M-key segment's 32K pages (tens of µs), and warm goes
   * in order, 2.65-2.85x an mdb_get loop instead of 1.68-1.76x through
   * the read queue (tern-bench api --docs 10M; 16 pages a key sent it to
   * the queue); a terms file of more than 64 pages a key asks every few
   * batches (varlen keys, 10M: each batch used to go sorted, slower than
   * single gets). */
  for (size_t si = 0; si < s->st->nslots; si++)
    if (!tern_seg_terms_resident(s->st->slots[si].ref->seg, n, 64)) return 0;
  return 1;
}

/* The keys looked up one after the other with cursor c (one cursor for
 * all: a key in the block the one before it read costs no read). */
static int batch_in_order(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                          void *payload, tern_seg_cursor *c) {
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    tern_slice v;
    int st = tern_snapshot_find(s, keys[i].data, keys[i].len, c, &v), cb = 0;
    if (st == TERN_OK) cb = fn(payload, i, TERN_OK, v.len ? v.data : "", v.len);
    else if (st == TERN_NOTFOUND) cb = fn(payload, i, TERN_NOTFOUND, NULL, 0);
    else rc = st;
    if (cb != 0) rc = tern_fail_stopped(cb);
  }
  return rc;
}

/* A warm batch (or one whose files were just read whole): many lookups'
 * cache misses in flight (batch_amac.c), or one lookup after the other as
 * tern_get does them.  Where the lines a lookup touches stay in the
 * cache, the steps of the first cost more than they hide (1M sequential
 * keys: 321 against 300-309 ns a key); where they do not, it is the
 * faster (10M random: ~400 against ~560).  Which is which depends on the
 * index, the keys and the machine's caches, so each index times both
 * (util/pick.h), a chunk of at most PICK_CHUNK keys at a time: a large
 * batch (`tern get` sends 100,000 keys) is then not spent whole on the
 * ways' first, alternating runs, and a chunk's values are kept only until
 * its callbacks ran.  Chunks of PICK_MIN keys or more are timed, smaller
 * ones take the way found cheaper. */
#define PICK_MIN 64u
#define PICK_CHUNK 4096u

/* A chunk's callback: its key numbers are the batch's, off on. */
typedef struct chunk_fn {
  tern_batch_fn fn;
  void *payload;
  size_t off;
} chunk_fn;

static int chunk_call(void *payload, size_t i, int status, const void *val, size_t vlen) {
  const chunk_fn *c = payload;
  return c->fn(c->payload, c->off + i, status, val, vlen);
}

/* c: the in-order way's cursor, shared by the batch's chunks (sorted keys
 * then read each block once across their bounds). */
static int warm_chunk(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                      void *payload, tern_seg_cursor *c) {
  tern_pick2 *pick = &s->idx->warm_batch;
  int timed = n >= PICK_MIN;
  unsigned in_order = timed ? tern_pick2_choose(pick) : tern_pick2_best(pick);
  uint64_t t0 = timed ? tern_pick2_clock() : 0;
  int rc = in_order ? batch_in_order(s, keys, n, fn, payload, c)
                    : tern_batch_amac(s, keys, n, fn, payload);
  if (rc == TERN_OK && timed) tern_pick2_learn(pick, in_order, tern_pick2_clock() - t0, n);
  return rc;
}

static int batch_warm(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                      void *payload) {
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "batch: out of memory");
  tern_seg_cursor_init(c);
  int rc = TERN_OK;
  if (!tern_batch_amac_usable(s)) {
    rc = batch_in_order(s, keys, n, fn, payload, c);
  } else if (n <= PICK_CHUNK) {
    rc = warm_chunk(s, keys, n, fn, payload, c);
  } else {
    for (size_t off = 0; rc == TERN_OK && off < n; off += PICK_CHUNK) {
      chunk_fn cf = {fn, payload, off};
      size_t m = n - off < PICK_CHUNK ? n - off : PICK_CHUNK;
      rc = warm_chunk(s, keys + off, m, chunk_call, &cf, c);
    }
  }
  tern_seg_cursor_release(c);
  free(c);
  return rc;
}

int tern_get_batch(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                   void *payload) {
  tern_clear_error();
  if (!s || (n && !keys) || !fn || n >= UINT32_MAX)
    return tern_fail(TERN_EINVAL, "tern_get_batch: bad arguments");
  for (size_t i = 0; i < n; i++)
    if (!keys[i].data || keys[i].len == 0 || keys[i].len > TERN_KEY_MAX)
      return tern_fail(TERN_EINVAL, "tern_get_batch: key %zu of %zu bytes", i, keys[i].len);
  if (n == 0) return TERN_OK;
  tern_count_gets(n);
  int load = batch_in_order_pays(s, keys, n) ? 1 : tern_batch_load(s, n); /* batch_load.h */
  if (load < 0) return load;
  if (load) return batch_warm(s, keys, n, fn, payload);
  batch_item *items = malloc(n * sizeof *items);
  uint32_t *order = malloc(n * sizeof *order);
  batch_res *res = calloc(n, sizeof *res);
  tern_arena vals;
  tern_arena_init(&vals);
  int rc = items && order && res ? TERN_OK : tern_fail(TERN_ENOMEM, "batch: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < n; i++)
    items[i].key = (tern_keyref){keys[i].data, (uint32_t)keys[i].len, (uint32_t)i};
  if (rc == TERN_OK) rc = tern_sort_by_key(order, items, sizeof *items, n, NULL);
  batch b = {s, items, order, n, res, &vals, NULL, NULL, 0, NULL, 0, 0, NULL};
  if (rc == TERN_OK) rc = batch_resolve(&b);
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    int r = res[i].val ? fn(payload, i, TERN_OK, res[i].val, res[i].vlen)
                       : fn(payload, i, TERN_NOTFOUND, NULL, 0);
    if (r != 0) rc = tern_fail_stopped(r);
  }
  tern_arena_free(&vals);
  free(items);
  free(order);
  free(res);
  return rc;
}

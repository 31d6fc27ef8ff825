/* SPDX-License-Identifier: MIT */
/*
 * segment_lookup_steps.c — tern_seg_pk_find cut into steps (the header
 * says which, and why).  Each step ends by starting the fetch of the lines
 * the next one reads; the caller steps other lookups meanwhile.
 */
#include "codec/segment_lookup_steps.h"
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

enum { STEP_FILTER = 1, STEP_INDEX, STEP_BLOCK, STEP_RUN, STEP_VALUE };

/* Lines of a block's header and restart keys fetched before it is opened
 * (as segment_reader.c's prefetch_block_header). */
#define HEADER_LINES 8u

int tern_seg_lookup_usable(const tern_seg *s) { return s->tim_map != NULL; }

int tern_seg_lookup_start(tern_seg_lookup *l, const tern_seg_gate *g,
                          const tern_seg_filter_line *line, const void *key, size_t len) {
  TERN_TRY(tern_seg_probe_head(&l->p, key, len));
  l->gate = g;
  l->line = line;
  /* An idle filter skips every probe: no hash (entry_done makes it for a
   * miss, to ask for the page) */
  l->hashed = !line || !tern_seg_filter_line_idle(line);
  l->p.fk.hash = l->hashed ? tern_filter_hash(key, len) : 0; /* the masks: step_filter */
  if (!tern_seg_gate_admits(g, &l->p)) return TERN_NOTFOUND;
  if (!l->hashed) {
    l->fblock = NULL;
  } else if (line) { /* the filter's line and its page's word in the checked bitmap */
    l->fblock = tern_seg_filter_line_block(line, l->p.fk.hash, &l->fpage);
    if (l->fblock) {
      __builtin_prefetch(l->fblock);
      if (!line->settled) __builtin_prefetch(&line->checked[l->fpage / 64]);
    }
  } else {
    tern_filter_view_prefetch(g->filter, l->p.fk.hash);
  }
  l->step = STEP_FILTER;
  return TERN_SEG_LOOKUP_MORE;
}

/* Block b of the unique field is the one: its header fetched. */
static int block_named(tern_seg_lookup *l, uint64_t b) {
  const tern_seg *s = l->gate->seg;
  const tern_seg_field *f = s->unique;
  l->gb = f->first_block + b;
  const uint8_t *blk = s->tim_map + tern_seg_block_offset(l->gb);
  for (uint32_t line = 0; line < HEADER_LINES; line++) __builtin_prefetch(blk + 64 * line);
  tern_seg_prefetch_header(f, b);
  /* Its record too, read by the next step: taken now, it was a miss the
   * lookup waited for while no other lookup's work covered it. */
  tern_terms_index_prefetch_block(&f->index, b);
  l->step = STEP_BLOCK;
  return TERN_SEG_LOOKUP_MORE;
}

/* The filter, then the terms index's directory names the group of
 * blocks; its heads fetched. */
static int step_filter(tern_seg_lookup *l) {
  int filter = TERN_SEG_FILTER_SKIPPED; /* not hashed: the line idle */
  if (l->hashed) { /* the line's answer (tern_seg_filter_line_gate), else the gate's */
    const uint8_t *fb =
        l->line ? tern_seg_filter_line_decide(l->line, l->fblock, l->fpage, &filter) : NULL;
    if (!l->line) filter = -1;
    if (fb || filter < 0) {
      tern_filter_key_init(&l->p.fk, l->p.fk.hash);
      filter = fb ? tern_filter_block_has(fb, &l->p.fk) : tern_seg_gate_filter(l->gate, &l->p);
    }
  }
  if (filter <= 0) return filter < 0 ? filter : TERN_NOTFOUND;
  l->filter = filter;
  const tern_seg_field *f = l->gate->seg->unique;
  if (!f || !f->nterms) return TERN_NOTFOUND;
  l->ih = tern_terms_index_key_head(&f->index, l->p.key, l->p.len);
  uint64_t b;
  int rc = tern_terms_index_find_group(&f->index, l->ih, l->p.key, l->p.len, &l->group, &b);
  if (rc < 0) return rc;
  if (rc == 1) return block_named(l, b); /* the index's prefix decided */
  tern_terms_index_prefetch_group(&f->index, l->group);
  l->step = STEP_INDEX;
  return TERN_SEG_LOOKUP_MORE;
}

/* The block, among the group's heads. */
static int step_index(tern_seg_lookup *l) {
  const tern_seg_field *f = l->gate->seg->unique;
  uint64_t b;
  TERN_TRY(tern_terms_index_find_in_group(&f->index, l->group, l->ih, l->p.key, l->p.len, &b));
  return block_named(l, b);
}

/* What tern_tb_lookup_begin / _finish answered (1 found, 0 not, < 0). */
static int entry_done(tern_seg_lookup *l, int rc) {
  const tern_seg *s = l->gate->seg;
  if (rc < 0) return rc;
  if (rc == 0) {
    if (l->filter == TERN_SEG_FILTER_SKIPPED)
      tern_seg_filter_missed(s, l->hashed ? l->p.fk.hash : tern_filter_hash(l->p.key, l->p.len));
    return TERN_NOTFOUND;
  }
  if (!l->t.pulsed) return TERN_SEG_LOOKUP_SLOW; /* the doc id is in NAME.doc */
  if (l->t.docs[0] >= s->max_doc)
    return tern_fail(TERN_ECORRUPT, "%s: key with doc %u of %u", tern_rfile_path(s->tim),
                     l->t.docs[0], s->max_doc);
  const uint8_t *val = tern_rfile_map(s->val);
  if (l->t.vinline || !val || l->t.voff >= s->val_size) return TERN_OK;
  __builtin_prefetch(val + l->t.voff);
  l->step = STEP_VALUE;
  return TERN_SEG_LOOKUP_MORE;
}

/* Block gb read (mapped, checked) unless the memo holds it. */
static int read_block(const tern_seg *s, uint64_t gb, tern_seg_block_memo *m,
                      const uint8_t **page) {
  for (unsigned i = 0; i < TERN_SEG_MEMO; i++)
    if (m->gb[i] == gb + 1) {
      *page = m->page[i];
      return TERN_OK;
    }
  int rc = tern_rfile_read_mapped(s->tim, tern_seg_block_offset(gb), TERN_BLOCK_SIZE, page);
  if (rc != TERN_OK) return rc; /* 1: not checked yet, nothing was read */
  m->gb[m->next] = gb + 1;
  m->page[m->next] = *page;
  m->next = (m->next + 1) % TERN_SEG_MEMO;
  return TERN_OK;
}

/* The block: its header, the restart search, and the fetch of the run to
 * scan. */
static int step_block(tern_seg_lookup *l, tern_seg_block_memo *memo) {
  const tern_seg *s = l->gate->seg;
  const uint8_t *page;
  int rc = read_block(s, l->gb, memo, &page);
  if (rc == 1) return TERN_SEG_LOOKUP_SLOW;
  if (rc != TERN_OK) return rc;
  const tern_seg_field *f = s->unique;
  uint64_t b = l->gb - f->first_block;
  tern_ti_block info = {0};
  TERN_TRY(tern_terms_index_block(&f->index, b, &info));
  TERN_TRY(tern_seg_open_block(s, f, b, page, info.entries, &l->blk));
  l->t = (tern_tb_tail){.docs = l->docs};
  rc = tern_tb_lookup_begin(&l->blk, l->p.key, (uint32_t)l->p.len, &l->index, &l->it, &l->t,
                            &l->pd);
  if (rc != TERN_TB_PENDING) return entry_done(l, rc);
  l->step = STEP_RUN;
  return TERN_SEG_LOOKUP_MORE;
}

int tern_seg_lookup_step(tern_seg_lookup *l, tern_seg_block_memo *memo) {
  switch (l->step) {
  case STEP_FILTER: return step_filter(l);
  case STEP_INDEX: return step_index(l);
  case STEP_BLOCK: return step_block(l, memo);
  case STEP_RUN:
    return entry_done(l, tern_tb_lookup_finish(&l->blk, l->p.key, (uint32_t)l->p.len, &l->pd,
                                               &l->index, &l->it, &l->t));
  case STEP_VALUE: return TERN_OK;
  default: return tern_fail(TERN_EINVAL, "lookup steps: not started");
  }
}

int tern_seg_lookup_value(const tern_seg_lookup *l, uint8_t *out, tern_slice *v) {
  if (l->t.vinline) {
    if (l->t.vlen) tern_tb_copy_value(&l->blk, &l->t, out);
    v->data = out;
    v->len = l->t.vlen;
    return TERN_OK;
  }
  const tern_seg *s = l->gate->seg;
  uint64_t size = tern_rfile_size(s->val);
  if (l->t.voff < TERN_FRAME_HEADER_SIZE || l->t.voff > size ||
      l->t.vlen > size - TERN_FRAME_FOOTER_SIZE - l->t.voff)
    return tern_fail(TERN_ECORRUPT, "%s: value of %u bytes at %llu outside the file",
                     tern_rfile_path(s->val), l->t.vlen, (unsigned long long)l->t.voff);
  const uint8_t *p;
  int rc = tern_rfile_read_mapped(s->val, l->t.voff, l->t.vlen, &p);
  if (rc != TERN_OK) return rc == 1 ? TERN_SEG_LOOKUP_SLOW : rc;
  v->data = p;
  v->len = l->t.vlen;
  return TERN_OK;
}

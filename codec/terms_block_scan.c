/* SPDX-License-Identifier: MIT */
/*
 * terms_block_scan.c — decodes a terms block in order: batches of terms
 * for a scanning cursor (tern_tb_iter_keys: the key stream in one tight
 * loop, each term whole) and positioning by entry index
 * (tern_tb_iter_seek); a term's hits by rank are terms_block_hits.c's.
 * Terms are prefix-coded against the one before, so each of these walks
 * from a restart or from where it stood.
 */
#include "codec/terms_block_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif


/* ------------------------------------------------------- batched scanning */

/* One non-restart entry's term at *kpos into dst, the previous term
 * (*len bytes) at prev; room: bytes writable at dst; exact: prev is the
 * caller's term buffer. */
static inline __attribute__((always_inline)) int batch_term(const tern_tb_block *b, uint32_t *kpos,
                                                            uint32_t *len, const uint8_t *prev,
                                                            uint8_t *dst, uint32_t room,
                                                            int exact) {
  uint32_t p, slen;
  TERN_TRY(read_prefix(b, kpos, *len, &p, &slen));
  copy_shared(dst, prev, p, exact);
  TERN_TRY(b->pair ? suffix_pairs(b, *kpos, slen, dst + p, room - p)
                   : tern_tb_decode_suffix(b, *kpos, slen, dst + p));
  *kpos += suffix_bits(b, slen);
  *len = p + slen;
  if (TERN_UNLIKELY(*kpos > b->tails_start)) return corrupt(b, "key past the end of the key stream");
  return TERN_OK;
}

/* Checks the batch's doc ids when the block has no doc column (doc ids
 * are the entries' ordinals, as the engine writes them: doc j is base +
 * j, so the first and the last bound them all). */
static int keys_docs_by_ordinal(const tern_tb_block *b, tern_tb_keys *k, int64_t base) {
  if (TERN_UNLIKELY(k->n && (base < 0 || base + k->n - 1 >= (int64_t)b->f.max_doc)))
    return corrupt(b, "doc id out of range");
  k->doc0 = (uint32_t)base;
  return TERN_OK;
}

/* Entry j's doc id, from the doc column at bit tpos (bw bits wide). */
static inline int keys_doc(const tern_tb_block *b, tern_tb_keys *k, uint32_t j, uint32_t tpos,
                           int64_t base) {
  int64_t d = base + (int64_t)get(b, tpos, b->bw_doc) + j;
  if (TERN_UNLIKELY(d < 0 || d >= (int64_t)b->f.max_doc)) return corrupt(b, "doc id out of range");
  k->doc[j] = (uint32_t)d;
  return TERN_OK;
}

/* A batch's tails in a one_doc block, every one of one width (tail_bits)
 * and its value inline: the checks decode_one_doc makes.  Each tail is
 * its doc (bw bits), then its value: entry j's tail at the first's plus
 * j * step. */
static int keys_tails_uniform(const tern_tb_block *b, const tern_tb_iter *it, tern_tb_keys *k,
                              int64_t base) {
  uint32_t tpos = it->pos, step = (uint32_t)b->tail_bits, bw = b->bw_doc;
  uint32_t vlen = b->f.has_values ? b->vlen_min : 0;
  if (bw == 0) TERN_TRY(keys_docs_by_ordinal(b, k, base));
  for (uint32_t j = 0; j < k->n; j++, tpos += step) {
    if (bw != 0) TERN_TRY(keys_doc(b, k, j, tpos, base));
    k->vbits[j] = (uint16_t)(tpos + bw);
    k->vlens[j] = vlen;
    k->tends[j] = (uint16_t)(tpos + step);
  }
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  return TERN_OK;
}

/* A batch's tails otherwise (tern_tb_batch_tails: values of many lengths, or in
 * NAME.val): walked one by one with tail_decode's checks, and a restart's
 * tail position checked against the stream, as tern_tb_iter_tail does. */
static int keys_tails_walk(const tern_tb_block *b, const tern_tb_iter *it, tern_tb_keys *k,
                           int64_t base) {
  uint32_t tpos = it->pos, bw = b->bw_doc, bv = b->bw_vlen, rs = b->restart;
  if (bw == 0) TERN_TRY(keys_docs_by_ordinal(b, k, base));
  uint32_t r = (k->first + rs - 1) / rs, rnext = r * rs; /* the next restart entry */
  for (uint32_t j = 0; j < k->n; j++) {
    if (TERN_UNLIKELY(k->first + j == rnext)) {
      uint32_t rk, rt;
      TERN_TRY(restart_pos(b, r++, &rk, &rt));
      if (rt != tpos) return corrupt(b, "restart position differs from the stream");
      rnext += rs;
    }
    if (bw != 0) TERN_TRY(keys_doc(b, k, j, tpos, base));
    tpos += bw;
    uint64_t vlen = 0;
    k->vbits[j] = 0;
    k->voffs[j] = 0;
    if (b->f.has_values) {
      vlen = b->vlen_min + get_col(b, tpos, bv);
      tpos += bv;
      if (TERN_UNLIKELY(vlen > VLEN_MAX)) return corrupt(b, "value too long");
      if (vlen <= b->f.inline_max) {
        k->vbits[j] = (uint16_t)tpos;
        tpos += 8 * (uint32_t)vlen;
      } else {
        k->voffs[j] = b->voff_min + get(b, tpos, b->bw_voff);
        tpos += b->bw_voff;
      }
    }
    if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
    k->vlens[j] = (uint32_t)vlen;
    k->tends[j] = (uint16_t)tpos;
  }
  return TERN_OK;
}

/* A batch's tails, when tern_tb_batch_tails holds (k->tails set when decoded). */
static int keys_tails(const tern_tb_block *b, const tern_tb_iter *it, tern_tb_keys *k) {
  k->tails = 0;
  if (!tern_tb_batch_tails(b)) return TERN_OK;
  int64_t base = b->doc_base + k->first;
  k->doc_col = b->bw_doc != 0;
  if (one_doc(b))
    TERN_TRY(keys_tails_uniform(b, it, k, base));
  else
    TERN_TRY(keys_tails_walk(b, it, k, base));
  k->tails = 1;
  return TERN_OK;
}

/* The end of a batch of j terms (e: the entry after them, kpos and len:
 * the key side after them, prev: the last term). */
static int keys_end(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_keys *k,
                    uint32_t e, uint32_t j, uint32_t kpos, uint32_t len, const uint8_t *prev) {
  if (e == b->n && (kpos + 7) / 8 * 8 != b->tails_start)
    return corrupt(b, "key stream length differs from its entries");
  memcpy(term, prev, len);
  it->kpos = kpos;
  it->len = len;
  k->n = j;
  return keys_tails(b, it, k);
}

/* pad: where the block is copied when its key stream ends within 8
 * bytes of the page's end (scan_read). */
void tern_tb_scan_consts_of(const tern_tb_block *b, scan_consts *sc, uint8_t *pad) {
  sc->page = b->page;
  if (TERN_UNLIKELY(b->tails_start / 8 + 8 > TERN_TB_PAGE)) {
    memcpy(pad, b->page, TERN_TB_PAGE);
    memset(pad + TERN_TB_PAGE, 0, 8);
    sc->page = pad;
  }
  sc->pair = b->pair;
  sc->rg = b->rpow[b->group];
  sc->k1 = b->nsym;
  sc->k2 = b->nsym * b->nsym;
  sc->powg = (uint32_t)(b->pow[b->group] - 1); /* K^g <= 2^32: its largest code */
  sc->gb = b->gbits[b->group];
  /* A valid group has K^(g+1) <= 2^32 (set_digit_coding), so a code of g
   * characters has at most 28 bits (g = 6, K = 23): two fit in one read. */
  assert(2 * sc->gb <= 57);
  sc->gmask = (uint32_t)(((uint64_t)1 << sc->gb) - 1);
  sc->cp = b->cp;
  sc->fixed = b->fixed_len;
  sc->bw_plen = b->bw_plen;
  sc->bw_slen = b->fixed_len ? 0 : b->bw_slen;
  sc->tails_start = b->tails_start;
  sc->gbits = b->gbits;
  sc->pow = b->pow;
  /* The row set_digit_coding made ready (b->tables: tern_tb_iter_keys
   * tested it). */
  sc->rmask = tern_tb_rmask_row(b->nsym ? b->nsym : 1);
}

/* Restart r's term at dst in a batch, inline and without calls (a
 * restart was an eighth of a scan's entries and a fifth of its decode),
 * with restart_term's checks of the key side: its position in the key
 * stream (equal to kpos, which the stream keeps inside it), its key's
 * span and the previous restart key's, and that the two ascend.  Its
 * tail position is not the key side's: a batch with tails bounds them by
 * the block's used length (keys_tails), and tern_tb_iter_tail checks a
 * restart's own.  page: the batch's scan_consts page, readable 8 bytes
 * past tails_start / 8, so past every restart key (they end at
 * keys_start / 8).  The block prefix is copied from the term before it
 * in the batch (prev; every term of the block starts with the prefix,
 * and the batch's room covers copy_shared's overrun). */
static inline __attribute__((always_inline)) int batch_restart(const tern_tb_block *b,
                                                               const uint8_t *page, uint32_t r,
                                                               uint32_t kpos, uint8_t *dst,
                                                               const uint8_t *prev,
                                                               uint32_t *len) {
  uint32_t rk = r == 0 ? b->keys_start : tern_load16(b->rkpos + 2 * (r - 1));
  if (TERN_UNLIKELY(rk != kpos)) return corrupt(b, "restart position differs from the stream");
  uint32_t lo, klen;
  TERN_TRY(restart_span(b, r, &lo, &klen));
  if (r > 0) {
    uint32_t plo, plen;
    TERN_TRY(restart_span(b, r - 1, &plo, &plen));
    /* Ascending, 8 bytes at a time (a difference at or past the shorter
     * length only ends the comparison). */
    uint32_t m = plen < klen ? plen : klen, at = 0;
    int cmp = (plen > klen) - (plen < klen);
    for (; at < m; at += 8) {
      uint64_t x = be64_at(page + plo + at), y = be64_at(page + lo + at);
      if (x != y) {
        if (at + (uint32_t)__builtin_clzll(x ^ y) / 8 < m) cmp = x < y ? -1 : 1;
        break;
      }
    }
    if (TERN_UNLIKELY(cmp >= 0)) return corrupt(b, "restart keys not ascending");
  }
  uint32_t cp = b->cp;
  copy_shared(dst, prev, cp, 0);
  dst += cp;
  for (uint32_t i = 0; i < klen; i += 8) { /* the room covers the overrun */
    uint8_t v[8];
    memcpy(v, page + lo + i, 8);
    memcpy(dst + i, v, 8);
  }
  *len = cp + klen;
  return TERN_OK;
}

/* tern_tb_iter_keys's loop for a block with the pair table and g
 * characters a code (constant when inlined): e from its entry to end. */
static inline __attribute__((always_inline)) int keys_pairs(const tern_tb_block *b, tern_tb_iter *it,
                                                            uint8_t *term, tern_tb_keys *k,
                                                            uint32_t end, uint32_t g, int fixed) {
  scan_consts sc;
  tern_tb_scan_consts_of(b, &sc, k->pad);
  uint32_t first = it->entry, kpos = it->kpos, len = it->len, j = 0, n = end - first;
  if (TERN_UNLIKELY(kpos > sc.tails_start)) /* scan_read's bound, once a batch */
    return corrupt(b, "key past the end of the key stream");
  uint32_t pmask = (1u << sc.bw_plen) - 1, smask = (1u << sc.bw_slen) - 1;
  uint32_t hb = sc.bw_plen + sc.bw_slen; /* sc.bw_slen is 0 when fixed: h is the prefix alone */
  if (fixed) pmask = ~0u;
  uint32_t r = (first + b->restart - 1) / b->restart;
  uint32_t jnext = r * b->restart - first; /* the next restart, from the batch's first */
  /* The term before the batch's first, copied in front of it: every term
   * then shares from bytes of the batch (copy_shared's overrun stays in).
   * The previous term always ends where the next one goes (at used), so
   * it is at k->bytes + used - len: no pointer to keep. */
  memcpy(k->bytes, term, len);
  uint32_t used = len;
  if (fixed) { /* every entry adds sc.fixed bytes: the fill bounds the count */
    uint32_t fit = (TERN_TB_KEYS_FILL - used + sc.fixed - 1) / sc.fixed;
    if (n > fit) n = fit;
  }
  while (j < n && (fixed || used < TERN_TB_KEYS_FILL)) {
    if (TERN_UNLIKELY(j == jnext)) {
      TERN_TRY(batch_restart(b, sc.page, r++, kpos, k->bytes + used, k->bytes + used - len, &len));
      jnext += b->restart;
      k->off[j] = (uint16_t)used;
      k->len[j] = (uint16_t)len;
      k->kend[j] = (uint16_t)kpos;
      used += len;
      j++;
      continue;
    }
    /* The entries before the next restart: a loop that calls nothing
     * (restart_term's call, inside it, made the compiler keep its values
     * on the stack; one loop for both kinds of entry, with batch_restart
     * inline, costs more still). */
    uint32_t stop = jnext < n ? jnext : n;
    for (; j < stop && (fixed || used < TERN_TB_KEYS_FILL); j++) {
      uint8_t *dst = k->bytes + used;
      uint32_t h = (uint32_t)scan_read(sc.page, kpos, hb); /* kpos <= tails_start */
      uint32_t p = sc.cp + (h & pmask), slen;
      kpos += hb;
      if (TERN_UNLIKELY(p > len))
        return corrupt(b, "entry shares more than the previous term holds");
      if (fixed) { /* the loop made for blocks of one term length: no suffix lengths */
        if (TERN_UNLIKELY(p >= sc.fixed)) return corrupt(b, "entry suffix empty");
        slen = sc.fixed - p;
      } else {
        slen = (h >> sc.bw_plen) & smask;
        if (TERN_UNLIKELY(slen == 0 || p + slen > TERN_TB_TERM_MAX))
          return corrupt(b, "bad entry suffix length");
      }
      copy_shared(dst, dst - len, p, 0);
      int bad = 0;
      kpos = scan_suffix(&sc, kpos, slen, dst + p, g, &bad);
      if (TERN_UNLIKELY(bad))
        return corrupt(b, bad == 2 ? "key past the end of the key stream"
                                   : "character outside the block alphabet");
      len = p + slen;
      k->off[j] = (uint16_t)used;
      k->len[j] = (uint16_t)len;
      k->kend[j] = (uint16_t)kpos;
      used += len;
    }
  }
  return keys_end(b, it, term, k, first + j, j, kpos, len, k->bytes + used - len);
}

int tern_tb_iter_keys(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_keys *k,
                      uint32_t want) {
  assert(want >= 1 && want <= TERN_TB_KEYS_MAX);
  uint32_t e = it->entry;
  k->first = e;
  k->n = 0;
  k->tails = 0;
  if (e >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY(!b->tables))
    return tern_fail(TERN_EINVAL, "terms block: decoding without tern_tb_tables");
  uint32_t end = b->n - e < want ? b->n : e + want;
  if (b->pair && b->group >= 2) {
    /* A loop made for each group size, and for one term length or coded lengths. */
    switch (2 * b->group + (b->fixed_len != 0)) {
    case 4: return keys_pairs(b, it, term, k, end, 2, 0);
    case 5: return keys_pairs(b, it, term, k, end, 2, 1);
    case 6: return keys_pairs(b, it, term, k, end, 3, 0);
    case 7: return keys_pairs(b, it, term, k, end, 3, 1);
    case 8: return keys_pairs(b, it, term, k, end, 4, 0);
    case 9: return keys_pairs(b, it, term, k, end, 4, 1);
    case 10: return keys_pairs(b, it, term, k, end, 5, 0);
    case 11: return keys_pairs(b, it, term, k, end, 5, 1);
    case 12: return keys_pairs(b, it, term, k, end, 6, 0);
    case 13: return keys_pairs(b, it, term, k, end, 6, 1);
    default: return corrupt(b, "group size"); /* 1..6, checked at open */
    }
  }
  uint32_t rmask = b->restart - 1, pow2 = (b->restart & rmask) == 0;
  uint32_t kpos = it->kpos, len = it->len, used = 0, j = 0;
  const uint8_t *prev = term;
  for (; e < end && used < TERN_TB_KEYS_FILL; e++, j++) {
    uint8_t *dst = k->bytes + used;
    if (pow2 ? (e & rmask) == 0 : e % b->restart == 0)
      TERN_TRY(tern_tb_restart_term(b, e / b->restart, kpos, dst, &len, NULL));
    else
      TERN_TRY(batch_term(b, &kpos, &len, prev, dst, TERN_TB_KEYS_ROOM - used, j == 0));
    k->off[j] = (uint16_t)used;
    k->len[j] = (uint16_t)len;
    k->kend[j] = (uint16_t)kpos;
    prev = dst;
    used += len;
  }
  return keys_end(b, it, term, k, e, j, kpos, len, prev);
}

int tern_tb_iter_tail(const tern_tb_block *b, tern_tb_iter *it, tern_tb_tail *t) {
  uint32_t e = it->entry, rmask = b->restart - 1;
  if (e >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY((b->restart & rmask) == 0 ? (e & rmask) == 0 : e % b->restart == 0)) {
    uint32_t rk, rt;
    TERN_TRY(restart_pos(b, e / b->restart, &rk, &rt));
    if (rt != it->pos) return corrupt(b, "restart position differs from the stream");
  }
  if (TERN_LIKELY(one_doc(b)))
    TERN_TRY(decode_one_doc(b, &it->pos, e, t));
  else
    TERN_TRY(tail_decode(b, &it->pos, e, t));
  it->entry = e + 1;
  return TERN_OK;
}

/* tern_tb_iter_seek from where `it` stands instead of from the restart,
 * when entry index is in the run of the entry just decoded: the entries
 * between are walked by their lengths alone, and only the characters that
 * survive into the term before index are decoded — the bytes the term
 * already holds from the entry just decoded stay as they are. */
/* Walks the n - 1 entries after one of length *len whose successor's
 * key starts at bit *pos, by their lengths alone (prefix, suffix length,
 * suffix widths): the suffix position, shared prefix and suffix length of
 * each (entries 1 .. n-1).  Leaves *pos and *len after the last. */
int tern_tb_walk_lengths(const tern_tb_block *b, uint32_t n, uint32_t *pos, uint32_t *len,
                         uint32_t *sp, uint32_t *pl, uint32_t *sl) {
  /* The block's constants as locals (the stores into sp, pl, sl may
   * alias b), and an entry's two lengths as one read. */
  const uint8_t *page = b->page;
  const uint16_t *sbits = b->sbits;
  uint32_t cp = b->cp, fixed = b->fixed_len, ends = b->tails_start;
  uint32_t bw_plen = b->bw_plen, bw_slen = fixed ? 0 : b->bw_slen, hb = bw_plen + bw_slen;
  uint32_t pmask = (1u << bw_plen) - 1, smask = (1u << bw_slen) - 1;
  uint32_t at = *pos, l = *len;
  for (uint32_t k = 1; k < n; k++) {
    uint32_t p = 0, s = 0; /* set by entry_lengths when it returns TERN_OK */
    TERN_TRY(entry_lengths(b, page, at, l, cp, fixed, bw_plen, hb, pmask, smask, &p, &s));
    at += hb;
    sp[k] = at;
    pl[k] = p;
    sl[k] = s;
    at += TERN_LIKELY(s < TERN_TB_SBITS) ? sbits[s] : suffix_bits_of(s, b->gdiv, b->group, b->gbits);
    l = p + s;
    if (TERN_UNLIKELY(at > ends)) return corrupt(b, "key past the end of the key stream");
  }
  *pos = at;
  *len = l;
  return TERN_OK;
}

/* Assembles into term, backwards, the bytes [floor, *need) the entry
 * after the walk shares with the walk's last: each walked entry k >= 1
 * supplies those past its own shared prefix that no later entry
 * replaced.  Leaves in *need what entry 0 must supply (<= floor: none). */
int tern_tb_assemble_shared(const tern_tb_block *b, uint32_t n, uint32_t floor,
                            const uint32_t *sp, const uint32_t *pl, const uint32_t *sl,
                            uint8_t *term, uint32_t *need) {
  uint8_t tmp[TERN_TB_TERM_MAX + TERN_TB_GROUP_MAX];
  for (uint32_t k = n; k-- > 1 && *need > floor;) {
    if (pl[k] >= *need) continue;
    uint32_t m = *need - pl[k];
    uint32_t whole = (m + b->group - 1) / b->group * b->group;
    TERN_TRY(tern_tb_decode_suffix(b, sp[k], whole < sl[k] ? whole : sl[k], tmp));
    memcpy(term + pl[k], tmp, m);
    *need = pl[k];
  }
  return TERN_OK;
}

static int iter_skip(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term) {
  uint32_t n = index - it->entry + 1; /* entry 0 of the walk: the term in `term` */
  uint32_t sp[256], pl[256], sl[256]; /* n <= restart interval <= 255 */
  uint32_t len = it->len, pos = it->kpos;
  TERN_TRY(tern_tb_walk_lengths(b, n, &pos, &len, sp, pl, sl));
  uint32_t need, peek = pos, slen;
  TERN_TRY(read_prefix(b, &peek, len, &need, &slen));
  TERN_TRY(tern_tb_assemble_shared(b, n, 0, sp, pl, sl, term, &need));
  uint32_t tpos = it->pos;
  if (TERN_LIKELY(b->tail_bits >= 0))
    tpos = b->tails_start + index * (uint32_t)b->tail_bits;
  else
    for (uint32_t k = it->entry; k < index && tpos <= b->used_bits; k++) tpos = skip_tail(b, tpos);
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  it->pos = tpos;
  it->entry = index;
  it->kpos = pos;
  it->len = len;
  return TERN_OK;
}

int tern_tb_iter_seek_from(const tern_tb_block *b, tern_tb_iter *it, uint32_t index,
                           uint8_t *term) {
  uint32_t e = it->entry;
  if (index >= e && e > 0 && e < b->n && index < b->n && e % b->restart != 0 &&
      index / b->restart == e / b->restart && it->len <= TERN_TB_TERM_MAX)
    return iter_skip(b, it, index, term);
  return tern_tb_iter_seek(b, it, index, term);
}

/* Skipping to an entry decodes only the characters that survive in the
 * term before it: the entries from the restart are walked by their
 * lengths alone (prefix, suffix length, suffix widths), then the bytes
 * entry `index` shares with the one before it are assembled backwards,
 * each entry supplying those past its own shared prefix that no later
 * entry replaced — typically one suffix's first characters instead of
 * half a restart interval of whole suffixes.  term[] then holds what the
 * next tern_tb_iter_next needs, not the whole previous term. */
int tern_tb_iter_seek(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term) {
  if (index >= b->n) return corrupt(b, "entry out of range");
  uint32_t r = index / b->restart;
  TERN_TRY(tern_tb_iter_restart(b, it, r, term));
  uint32_t n = index - it->entry;
  if (n == 0) return TERN_OK;
  const uint8_t *rk;
  uint32_t rlen, pos = it->kpos;
  TERN_TRY(restart_key(b, r, &rk, &rlen));
  uint32_t sp[256], pl[256], sl[256]; /* n < restart interval <= 255 */
  uint32_t len = b->cp + rlen;
  pl[0] = b->cp;
  sl[0] = rlen;
  TERN_TRY(tern_tb_walk_lengths(b, n, &pos, &len, sp, pl, sl));
  /* Entry `index` keeps only the bytes it shares with entry index-1. */
  uint32_t need, peek = pos, slen;
  TERN_TRY(read_prefix(b, &peek, len, &need, &slen));
  TERN_TRY(tern_tb_assemble_shared(b, n, b->cp, sp, pl, sl, term, &need));
  if (need > b->cp) memcpy(term + b->cp, rk, need - b->cp); /* the rest from the restart key */
  TERN_TRY(tail_pos(b, index, r, it->pos, &it->pos));
  it->entry = index;
  it->kpos = pos;
  it->len = len;
  return TERN_OK;
}

/* SPDX-License-Identifier: MIT */
/*
 * terms_index.h — the resident terms index of one field: for every terms
 * block, a separator key and the ordinal of its first term.  A lookup
 * binary-searches it for the one block that can hold a key, so a cold
 * lookup reads exactly one block.
 *
 * Separators are the shortest prefix of a block's first term that is
 * greater than the previous block's last term (block 0: the empty key), so
 * "the last block whose separator is <= key" is the block where key would
 * sit.  For random 16-byte keys they are ~5 bytes instead of 16.
 *
 * On disk (inside NAME.tix) the blocks' records come in groups of
 * TERN_TI_GROUP, each group's first record whole (sharing nothing with the
 * one before), followed by a directory of the groups (where each starts,
 * its separator bytes before it, its first ordinal).  Opening reads only
 * the directory and the groups' first separators — O(blocks / 64) — and a
 * group's records are decoded on its first use, once per process (a
 * 10M-key index has ~29,000 blocks: decoding them all took ~1.3 ms of a
 * fresh process's open).
 *
 * In memory, the directory becomes small arrays, one entry a group: its
 * first separator's heads (the 8 bytes after the prefix all separators
 * share — past block 0's empty one — as a big-endian integer, and the
 * next 24 as three more), where that separator is, and its first ordinal.
 * A lookup binary-searches those, then the group's own blocks: a group,
 * decoded on first use into one allocation, holds the first head of each
 * of its blocks (and the next group's first, so a block's successor is
 * always at hand), their first ordinals and separators, and for its own
 * search the heads taken after the prefix its separators share
 * (tern_ti_group).  A thread that finds a group missing decodes it and
 * publishes it with one compare-and-swap; a thread that lost the race
 * frees its copy.  The struct itself does not change after open: lookups
 * take it const.
 */
#ifndef TERN_TERMS_INDEX_H
#define TERN_TERMS_INDEX_H

#include "codec/bytebuf.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TERN_TI_MORE 3         /* heads past the first, per block */
#define TERN_TI_GROUP 64u      /* blocks per group of records */
#define TERN_TI_DIR_ENTRY 16u  /* bytes per directory entry */
#define TERN_TI_SEP_MAX 1024u  /* separators are prefixes of terms */

/* One decoded group: slot i is block first + i, slot `nb` (the count)
 * the next group's first block (or the end).  The search in the group
 * compares `lheads`: each separator's 8 bytes after the prefix the
 * group's separators 1..nb-1 share (`lskip` bytes, at least the index's
 * `skip` and mostly more: neighbouring blocks share more), then on a tie the
 * next 24 (`lmore`), so that keys with long shared prefixes (paths,
 * URLs) are told apart by one or two numbers per probe, eight lines for
 * the whole search when the first decides. */
typedef struct tern_ti_group {
  uint32_t lskip; /* bytes separators 1..nb-1 share, their group's prefix */
  uint32_t long_seps; /* some separator runs past its head: searched by bytes (find_in_group) */
  /* lheads[0]: the prefix's first 8 bytes as a head (slot 0 is never
   * probed, and this is the line the search reads first, with lskip). */
  uint64_t lheads[TERN_TI_GROUP];
  uint64_t lmore[TERN_TI_MORE * TERN_TI_GROUP]; /* the next heads after lheads' */
  uint64_t first_ord[TERN_TI_GROUP + 1];
  uint32_t sep_off[TERN_TI_GROUP + 1]; /* into sep */
  uint8_t sep[];                       /* the group's separators */
} tern_ti_group;

typedef struct tern_terms_index {
  uint64_t nblocks, ngroups, nterms;
  size_t skip;     /* bytes every separator of blocks 1.. starts with */
  int long_seps;   /* some group's first separator runs past its head (find_group) */
  uint8_t *prefix; /* those bytes */
  /* Per group (ngroups + 1; the last entry: the end), from the directory. */
  uint64_t *gheads, *gheads2, *gord;
  uint32_t *glen;        /* first separator's length */
  const uint8_t **gsep;  /* its bytes (the group's first record, whole) */
  _Atomic(tern_ti_group *) *groups;
  const uint8_t *recs, *dir; /* records and directory (inside NAME.tix's body) */
  size_t recs_len;
  uint32_t arena_len, max_entries;
  const char *what;
} tern_terms_index;

/* What a reader needs of block b. */
typedef struct tern_ti_block {
  uint64_t first_ord;
  uint32_t entries;
} tern_ti_block;

/* Writer of one field's index: blocks are added in order, then the whole
 * section is appended to the field's record. */
typedef struct tern_terms_index_builder {
  tern_bytebuf recs, dir;
  uint8_t prev[TERN_TI_SEP_MAX];
  size_t prev_len;
  uint64_t nblocks, ord, arena;
  uint32_t prev_entries;
} tern_terms_index_builder;

/* Starts a new field (keeps the buffers). */
void tern_terms_index_builder_reset(tern_terms_index_builder *b);
/* Appends a block: its separator (empty for block 0 only) and entries. */
int tern_terms_index_builder_add(tern_terms_index_builder *b, const uint8_t *sep, size_t len,
                                 uint32_t entries);
/* Appends the section (length, records, directory, arena size) to out. */
int tern_terms_index_builder_finish(tern_terms_index_builder *b, tern_bytebuf *out);
void tern_terms_index_builder_free(tern_terms_index_builder *b);

/* The separator between a block ending with `last` and the next one
 * starting with `first` (> last): its length (a prefix of first). */
size_t tern_terms_index_separator(const uint8_t *last, size_t last_len, const uint8_t *first,
                                  size_t first_len);

/* Reader: takes the section at *p (not past end) for nblocks blocks and
 * nterms terms, checks its directory and advances *p past it.  The
 * records stay in the caller's buffer, which must outlive the index; so
 * must `what` (named in errors).  Each group's records are checked when
 * it is decoded (separators ascending, entries 1..max_entries adding up to
 * the directory's ordinals): a damaged group fails every lookup that
 * needs it with TERN_ECORRUPT. */
int tern_terms_index_decode(tern_terms_index *ix, const uint8_t **p, const uint8_t *end,
                            uint64_t nblocks, uint64_t nterms, uint32_t max_entries,
                            const char *what);
void tern_terms_index_free(tern_terms_index *ix);

/* Block b's ordinals (decoding its group if no thread did). */
static inline int tern_terms_index_block(const tern_terms_index *ix, uint64_t b,
                                         tern_ti_block *out);
/* Starts fetching block b's record (tern_terms_index_block's line) when
 * its group is decoded, else nothing: for lookups interleaved with others,
 * which read it a step later instead of waiting for it now. */
static inline void tern_terms_index_prefetch_block(const tern_terms_index *ix, uint64_t b);
/* Group g, decoded (tern_terms_index_block's slow path). */
int tern_terms_index_group_decode(const tern_terms_index *ix, uint64_t g,
                                  const tern_ti_group **out);
/* Decodes every group, checking it (verify). */
int tern_terms_index_ensure_all(const tern_terms_index *ix);

/* *b: the last block whose separator is <= key (0 when none is). */
int tern_terms_index_find(const tern_terms_index *ix, const uint8_t *key, size_t len, uint64_t *b);
/* The same, given kh = tern_terms_index_key_head(ix, key, len). */
int tern_terms_index_find_head(const tern_terms_index *ix, uint64_t kh, const uint8_t *key, size_t len,
                               uint64_t *b);
/* tern_terms_index_find_head in two halves, for lookups interleaved with
 * others (codec/segment_lookup_steps.h): find_group searches the
 * directory — 1 when the index's prefix alone decides (*b set), else 0
 * with the group in *g — and prefetch_group starts fetching that group's
 * search heads; find_in_group then searches them for *b (kh is not used:
 * the group's heads are taken after its own prefix).  No I/O. */
int tern_terms_index_find_group(const tern_terms_index *ix, uint64_t kh, const uint8_t *key,
                                size_t len, uint64_t *g, uint64_t *b);
void tern_terms_index_prefetch_group(const tern_terms_index *ix, uint64_t g);
int tern_terms_index_find_in_group(const tern_terms_index *ix, uint64_t g, uint64_t kh,
                                   const uint8_t *key, size_t len, uint64_t *b);
/* A walk over a group's records, for keys in ascending order: the block
 * a key falls in (as tern_terms_index_find_head) and its ordinals (as
 * tern_terms_index_block), found by reading the group's records from the
 * last key's block on, each checked as a group's decode checks it (and
 * the group's entries and end against the directory when a walk enters
 * it), without decoding the group: a cold process decodes a group on its first use, 1.3
 * to 3.7 µs (its separators, their heads, an allocation), and a sparse
 * cold batch uses most groups once.  A group some thread decoded is
 * searched instead.  Init once per field; the keys given to one walk must
 * ascend (a lower one starts the group over: slower, never wrong). */
typedef struct tern_ti_walk {
  uint64_t g;                 /* the group walked, UINT64_MAX: none yet */
  const uint8_t *p, *end;     /* its next record */
  uint64_t i, nb;             /* the current block (in the group), the group's blocks */
  uint64_t ord, entries;      /* the current block's first ordinal and entries */
  uint64_t next_entries;      /* the next record's, when read (have_next) */
  size_t len[2];              /* separators: cur is the current block's, */
  unsigned cur, have_next;    /* !cur the next one's when read */
  uint8_t sep[2][TERN_TI_SEP_MAX];
} tern_ti_walk;
void tern_terms_index_walk_init(tern_ti_walk *w);
int tern_terms_index_walk_find(const tern_terms_index *ix, tern_ti_walk *w, uint64_t kh,
                               const uint8_t *key, size_t len, uint64_t *b, tern_ti_block *info);
/* The key's head as the index's heads are taken: its bytes from `skip`. */
static inline uint64_t tern_terms_index_key_head(const tern_terms_index *ix, const uint8_t *key,
                                                 size_t len);
/* *b: the block holding ordinal ord (< the term count). */
int tern_terms_index_find_ordinal(const tern_terms_index *ix, uint64_t ord, uint64_t *b);
/* The first 8 bytes of a key as a big-endian number, zero-padded: the
 * order of heads is the order of keys wherever two heads differ. */
uint64_t tern_terms_index_head(const uint8_t *key, size_t len);
/* Block b's separator. */
int tern_terms_index_sep(const tern_terms_index *ix, uint64_t b, const uint8_t **sep, size_t *len);

/* The key's 8 bytes from `at` as a head (zero-padded past its end). */
static inline uint64_t tern_terms_index_head_at(const uint8_t *key, size_t len, size_t at) {
  if (len >= at + 8) {
    uint64_t v;
    memcpy(&v, key + at, sizeof v);
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  return len > at ? tern_terms_index_head(key + at, len - at) : 0;
}

static inline uint64_t tern_terms_index_key_head(const tern_terms_index *ix, const uint8_t *key,
                                                 size_t len) {
  return tern_terms_index_head_at(key, len, ix->skip);
}

/* Group g: published, or decoded now. */
static inline int tern_terms_index_group(const tern_terms_index *ix, uint64_t g,
                                         const tern_ti_group **out) {
  tern_ti_group *gr = atomic_load_explicit(&ix->groups[g], memory_order_acquire);
  if (__builtin_expect(gr != NULL, 1)) {
    *out = gr;
    return 0;
  }
  return tern_terms_index_group_decode(ix, g, out);
}

static inline int tern_terms_index_block(const tern_terms_index *ix, uint64_t b,
                                         tern_ti_block *out) {
  const tern_ti_group *gr;
  int rc = b < ix->nblocks ? tern_terms_index_group(ix, b / TERN_TI_GROUP, &gr)
                           : tern_terms_index_group_decode(ix, UINT64_MAX, &gr);
  if (rc != 0) return rc;
  uint64_t i = b % TERN_TI_GROUP;
  out->first_ord = gr->first_ord[i];
  out->entries = (uint32_t)(gr->first_ord[i + 1] - gr->first_ord[i]);
  return 0;
}

static inline void tern_terms_index_prefetch_block(const tern_terms_index *ix, uint64_t b) {
  if (b >= ix->nblocks) return;
  const tern_ti_group *gr =
      atomic_load_explicit(&ix->groups[b / TERN_TI_GROUP], memory_order_acquire);
  if (gr) __builtin_prefetch(&gr->first_ord[b % TERN_TI_GROUP]);
}

#endif

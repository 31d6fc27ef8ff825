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
 * In memory the index is four arrays and an arena: the 8 bytes of each
 * separator after the prefix all separators share (past block 0's empty
 * one) as a big-endian integer, and the next 24 as three more, side by
 * side (the binary search compares the key with the shared prefix once,
 * then these, and touches the arena only when all four tie), separator
 * offsets, and first ordinals.  On disk (inside NAME.tix) each block is
 *   varint shared | varint suffix length | suffix bytes | varint entries
 * with `shared` counted against the previous separator.
 */
#ifndef TERN_TERMS_INDEX_H
#define TERN_TERMS_INDEX_H

#include "codec/bytebuf.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TERN_TI_MORE 3 /* heads past the first, per block */

typedef struct tern_terms_index {
  uint64_t nblocks;
  uint64_t *heads;     /* nblocks: separator bytes skip..skip+7 (block 0: 0) */
  uint64_t *heads2;    /* TERN_TI_MORE per block: separator bytes skip+8.., 8 at a time */
  size_t skip;         /* bytes every separator of blocks 1.. starts with */
  uint32_t *sep_off;   /* nblocks + 1, into arena */
  uint64_t *first_ord; /* nblocks + 1: the last is the field's term count */
  uint8_t *arena;
} tern_terms_index;

/* Writer: appends a block's record to `out`.  prev/prev_len: the previous
 * block's separator (ignored for block 0, whose separator is empty). */
int tern_terms_index_put(tern_bytebuf *out, const uint8_t *prev_sep, size_t prev_len,
                         const uint8_t *sep, size_t len, uint32_t entries);
/* The separator between a block ending with `last` and the next one
 * starting with `first` (> last): its length (a prefix of first). */
size_t tern_terms_index_separator(const uint8_t *last, size_t last_len, const uint8_t *first,
                                  size_t first_len);

/* Reader: decodes nblocks records at *p (not past end), checks them
 * (separators ascending, entries 1..max, their sum nterms) and advances *p. */
int tern_terms_index_decode(tern_terms_index *ix, const uint8_t **p, const uint8_t *end,
                            uint64_t nblocks, uint64_t nterms, uint32_t max_entries,
                            const char *what);
void tern_terms_index_free(tern_terms_index *ix);
size_t tern_terms_index_memory(const tern_terms_index *ix);

/* The last block whose separator is <= key (0 when none is). */
uint64_t tern_terms_index_find(const tern_terms_index *ix, const uint8_t *key, size_t len);
/* The same, given kh = tern_terms_index_key_head(ix, key, len). */
uint64_t tern_terms_index_find_head(const tern_terms_index *ix, uint64_t kh, const uint8_t *key,
                                    size_t len);
/* The key's head as the index's heads are taken: its bytes from `skip`. */
static inline uint64_t tern_terms_index_key_head(const tern_terms_index *ix, const uint8_t *key,
                                                 size_t len);
/* The block holding ordinal ord (< the term count). */
uint64_t tern_terms_index_find_ordinal(const tern_terms_index *ix, uint64_t ord);
/* The first 8 bytes of a key as a big-endian number, zero-padded: the
 * order of heads is the order of keys wherever two heads differ. */
uint64_t tern_terms_index_head(const uint8_t *key, size_t len);
/* Block b's separator. */
const uint8_t *tern_terms_index_sep(const tern_terms_index *ix, uint64_t b, size_t *len);

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

#endif

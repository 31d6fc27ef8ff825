/* SPDX-License-Identifier: MIT */
/*
 * catalog_check.c — catalog.mdb checked with plain reads (catalog_check.h).
 *
 * The layout read here is LMDB 0.9's (liblmdb/mdb.c: MDB_page, MDB_node,
 * MDB_db, MDB_meta on a 64-bit host); nothing in it is trusted.
 */
#include "engine/format/catalog_check.h"
#include "engine/format/catalog_schema.h"
#include "engine/util/vec.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
  PAGEHDRSZ = 16, /* pgno u64, pad u16, flags u16, lower u16, upper u16 (or pages u32) */
  NODESIZE = 8,   /* lo u16, hi u16, flags u16, ksize u16 */
  DBSIZE = 48,    /* pad u32, flags u16, depth u16, branch, leaf, overflow, entries, root u64 */
  META_DBS = PAGEHDRSZ + 24,
  META_LAST_PG = PAGEHDRSZ + 120,
  META_TXNID = PAGEHDRSZ + 128,
  META_END = PAGEHDRSZ + 136,
  MAX_DEPTH = 32,
  FAST_PSIZE = 4096 /* LMDB's page size on the machines tern runs on: both meta heads in one read */
};
#define P_BRANCH 0x01u
#define P_LEAF 0x02u
#define P_OVERFLOW 0x04u
#define P_META 0x08u
#define P_KINDS 0x6fu /* branch, leaf, overflow, meta, leaf2, subp */
#define F_BIGDATA 0x01u
#define F_SUBDATA 0x02u
#define F_DUPDATA 0x04u
#define MDB_MAGIC_WORD 0xBEEFC0DEu
#define MDB_DATA_VERSION_1 1u
#define P_INVALID_PG UINT64_MAX

typedef struct meta {
  uint32_t psize;
  uint64_t last_pg, txnid;
  uint8_t dbs[2][DBSIZE]; /* free list, main */
} meta;

typedef struct db {
  uint16_t flags, depth;
  uint64_t branch, leaf, overflow, entries, root;
} db;

static db db_of(const uint8_t *p) {
  db d = {tern_load16(p + 4), tern_load16(p + 6), tern_load64(p + 8), tern_load64(p + 16),
          tern_load64(p + 24), tern_load64(p + 32), tern_load64(p + 40)};
  return d;
}

static int bad(const char *path, const char *what, uint64_t pg) {
  return tern_fail(TERN_ECORRUPT, "%s: damaged LMDB file: %s (page %llu)", path, what,
                   (unsigned long long)pg);
}

/* The catalog file being checked, and its size at the last fstat. */
typedef struct cat_file {
  int fd;
  const char *path;
  uint64_t size;
} cat_file;

static int read_at(int fd, void *buf, size_t n, uint64_t off, const char *path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return tern_fail_errno(path);
    if (r == 0) return tern_fail(TERN_ECORRUPT, "%s: truncated LMDB file", path);
    done += (size_t)r;
  }
  return TERN_OK;
}

/* The size of the file open as fd, refused unless a regular file. */
static int regular_size(int fd, const char *path, uint64_t *size) {
  *size = 0;
  struct stat st;
  if (fstat(fd, &st) < 0) return tern_fail_errno(path);
  if (!S_ISREG(st.st_mode)) return tern_fail(TERN_ECORRUPT, "%s: not a regular file", path);
  *size = (uint64_t)st.st_size;
  return TERN_OK;
}

static int cat_read(const cat_file *f, void *buf, size_t n, uint64_t off) {
  return read_at(f->fd, buf, n, off, f->path);
}

static int open_catalog(const char *path, int *fd) {
  /* O_NONBLOCK: a FIFO named like the catalog must not hang the open. */
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  return *fd < 0 ? tern_fail_errno(path) : TERN_OK;
}

typedef enum { META_OK, META_NOT_LMDB, META_VERSION, META_PSIZE } meta_verdict;

/* A meta page's head, META_END bytes at b, decoded and judged. */
static meta_verdict meta_decode(const uint8_t *b, meta *m) {
  if (!(tern_load16(b + 10) & P_META) || tern_load32(b + PAGEHDRSZ) != MDB_MAGIC_WORD)
    return META_NOT_LMDB;
  if (tern_load32(b + PAGEHDRSZ + 4) != MDB_DATA_VERSION_1) return META_VERSION;
  memcpy(m->dbs, b + META_DBS, sizeof m->dbs);
  m->psize = tern_load32(b + META_DBS); /* the free list's pad holds the page size */
  m->last_pg = tern_load64(b + META_LAST_PG);
  m->txnid = tern_load64(b + META_TXNID);
  if (m->psize < 512 || m->psize > 65536 || (m->psize & (m->psize - 1))) return META_PSIZE;
  return META_OK;
}

/* A meta page's head at off: from `head` when given (read already), else read. */
static int meta_read(const cat_file *f, uint64_t off, const uint8_t *head, meta *m) {
  uint8_t b[META_END];
  if (head)
    memcpy(b, head, sizeof b);
  else
    TERN_TRY(cat_read(f, b, sizeof b, off));
  switch (meta_decode(b, m)) {
  case META_OK:
    return TERN_OK;
  case META_NOT_LMDB:
    return tern_fail(TERN_ECORRUPT, "%s: not an LMDB file (meta page at %llu)", f->path,
                     (unsigned long long)off);
  case META_VERSION:
    return tern_fail(TERN_EVERSION, "%s: LMDB data version %u", f->path,
                     tern_load32(b + PAGEHDRSZ + 4));
  case META_PSIZE:
    break;
  }
  return tern_fail(TERN_ECORRUPT, "%s: LMDB page size %u", f->path, m->psize);
}

/* Transaction N writes meta page N & 1, and a reader with the lock file
 * picks the page by that parity: a meta in the other slot (pages
 * swapped, or copied) would serve an older commit as the newest. */
static int meta_in_its_slot(const meta *m, int slot) {
  return m->txnid == 0 || (m->txnid & 1) == (uint64_t)slot;
}

/* Whether the newest meta's pages all lie inside `size` bytes. */
static int size_holds(const meta *m, uint64_t size) {
  return m->last_pg >= 1 && m->last_pg < UINT64_MAX / m->psize && (m->last_pg + 1) * m->psize <= size;
}

/* Both meta pages (LMDB refuses the file unless both are sound) and the
 * newest.  The size is taken after the meta pages are read: a writer in
 * another process writes a commit's pages (growing the file) before the
 * meta page that claims them, and LMDB never shrinks the file, so a size
 * read after a meta holds every page it claims; read before, it may not
 * (a false "truncated"). */
static int metas_read(cat_file *f, meta ms[2], int *newest) {
  const char *path = f->path;
  if (f->size < 2u * 512u) return tern_fail(TERN_ECORRUPT, "%s: %llu bytes, not an LMDB file", path,
                                            (unsigned long long)f->size);
  /* Both heads in one read when the page size is the usual one. */
  uint8_t b[FAST_PSIZE + META_END];
  int both = f->size >= sizeof b;
  TERN_TRY(cat_read(f, b, both ? sizeof b : META_END, 0));
  TERN_TRY(meta_read(f, 0, b, &ms[0]));
  if (f->size < 2u * (uint64_t)ms[0].psize)
    return tern_fail(TERN_ECORRUPT, "%s: truncated before its second meta page", path);
  TERN_TRY(meta_read(f, ms[0].psize, both && ms[0].psize == FAST_PSIZE ? b + FAST_PSIZE : NULL, &ms[1]));
  if (ms[1].psize != ms[0].psize)
    return tern_fail(TERN_ECORRUPT, "%s: meta pages disagree on the page size", path);
  for (int i = 0; i < 2; i++)
    if (!meta_in_its_slot(&ms[i], i))
      return tern_fail(TERN_ECORRUPT, "%s: meta page %d holds transaction %llu", path, i,
                       (unsigned long long)ms[i].txnid);
  *newest = ms[1].txnid > ms[0].txnid;
  const meta *m = &ms[*newest];
  struct stat st;
  if (fstat(f->fd, &st) < 0) return tern_fail_errno(path);
  f->size = (uint64_t)st.st_size;
  if (!size_holds(m, f->size))
    return tern_fail(TERN_ECORRUPT,
                     "%s: truncated: %llu bytes hold fewer than the %llu pages its meta page claims",
                     path, (unsigned long long)f->size, (unsigned long long)m->last_pg + 1);
  return TERN_OK;
}

/* The two meta pages hold the last two transactions, N and N - 1: LMDB
 * writes page N & 1 at commit N, so the other holds N - 1 (0 and 1 in a
 * file with one commit, or in a compacted copy; both 0 before any).  A damaged transaction
 * number would make LMDB pick the older meta page and so serve the commit
 * before the last as if it were the last, every record of it soundly
 * sealed: refused here instead.  (A reader racing two commits can see
 * N + 2 beside N - 1; the next read sees them consecutive.) */
static int metas_in_a_row(const meta ms[2], int newest) {
  uint64_t hi = ms[newest].txnid, lo = ms[!newest].txnid;
  return hi - lo == 1 || hi == 0; /* hi 0: never committed */
}

static int metas_consecutive(const meta ms[2], int newest, const char *path) {
  if (metas_in_a_row(ms, newest)) return TERN_OK;
  return tern_fail(TERN_ECORRUPT,
                   "%s: meta pages hold transactions %llu and %llu, not two in a row", path,
                   (unsigned long long)ms[0].txnid, (unsigned long long)ms[1].txnid);
}

/* Damage is what two reads in a row see the same: a meta page read while
 * another process's commit writes it may come out torn, and the next
 * read sees it whole.  At most CHECK_READS reads, 1 ms apart. */
#define CHECK_READS 4

int tern_catalog_precheck(const char *path, int *empty) {
  int fd;
  *empty = 0;
  TERN_TRY(open_catalog(path, &fd));
  int rc = tern_catalog_precheck_fd(fd, path, empty);
  close(fd);
  return rc;
}

/* metas_read's checks on the usual file in two system calls: both meta
 * pages' heads in one read (LMDB's page size is the system's, FAST_PSIZE
 * bytes on the machines tern runs on), then the size, after them
 * (metas_read says why).  0 for anything it does not pass (another page
 * size, a short file, any fault): the caller takes the full path, which
 * says what is wrong. */
static int metas_fast(int fd, meta ms[2], int *newest, uint64_t *size) {
  uint8_t b[FAST_PSIZE + META_END];
  if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b || meta_decode(b, &ms[0]) != META_OK ||
      ms[0].psize != FAST_PSIZE || meta_decode(b + FAST_PSIZE, &ms[1]) != META_OK ||
      ms[1].psize != FAST_PSIZE || !meta_in_its_slot(&ms[0], 0) || !meta_in_its_slot(&ms[1], 1))
    return 0;
  *newest = ms[1].txnid > ms[0].txnid;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  *size = (uint64_t)st.st_size;
  return size_holds(&ms[*newest], *size);
}

static int precheck_fast(int fd) {
  meta ms[2];
  int newest;
  uint64_t size;
  return metas_fast(fd, ms, &newest, &size) && metas_in_a_row(ms, newest);
}

int tern_catalog_precheck_fd(int fd, const char *path, int *empty) {
  *empty = 0;
  if (precheck_fast(fd)) return TERN_OK;
  cat_file f = {fd, path, 0};
  TERN_TRY(regular_size(fd, path, &f.size));
  if (f.size == 0) {
    *empty = 1;
    return TERN_OK;
  }
  char last[256] = "";
  int rc = TERN_OK;
  for (int i = 0; i < CHECK_READS; i++) {
    meta ms[2] = {{0}}; /* set by metas_read, but gcc -O3 cannot see it */
    int newest = 0;
    rc = metas_read(&f, ms, &newest);
    if (rc == TERN_OK) rc = metas_consecutive(ms, newest, path);
    if (rc != TERN_ECORRUPT || !strcmp(last, tern_errmsg())) break;
    snprintf(last, sizeof last, "%s", tern_errmsg());
    struct timespec ms1 = {0, 1000000};
    nanosleep(&ms1, NULL);
  }
  return rc;
}

/* ------------------------------------------------------------ the walk */

typedef struct walker {
  cat_file *file;
  const char *path;
  uint32_t psize;
  uint64_t last_pg;
  uint8_t *seen; /* a bit per page */
  uint8_t *page; /* psize bytes */
  tern_catalog_walk_info *info;
  tern_u64vec freed; /* the pages the free-list records name, checked after the walk */
} walker;

typedef enum { TREE_FREE, TREE_MAIN, TREE_TABLE } tree_kind;

typedef struct counts {
  uint64_t branch, leaf, overflow, entries;
} counts;

static int mark(walker *w, uint64_t pg, uint64_t n) {
  if (pg < 2 || pg > w->last_pg || n > w->last_pg - pg + 1)
    return bad(w->path, "page number out of range", pg);
  for (uint64_t p = pg; p < pg + n; p++) {
    uint8_t bit = (uint8_t)(1u << (p & 7));
    if (w->seen[p >> 3] & bit) return bad(w->path, "page reached twice", p);
    w->seen[p >> 3] |= bit;
  }
  return TERN_OK;
}

static int load_page(walker *w, uint64_t pg, uint8_t *into) {
  TERN_TRY(cat_read(w->file, into, w->psize, pg * w->psize));
  w->info->pages++;
  if (tern_load64(into) != pg) return bad(w->path, "page header names another page", pg);
  return TERN_OK;
}

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, int intkey) {
  if (intkey && an == 8 && bn == 8) {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    return (x > y) - (x < y);
  }
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

/* An overflow run: its first page's header and that it fits the file. */
static int walk_overflow(walker *w, uint64_t pg, uint64_t dsize, counts *c, uint8_t *buf) {
  uint64_t n = (PAGEHDRSZ - 1 + dsize) / w->psize + 1;
  TERN_TRY(mark(w, pg, n));
  TERN_TRY(load_page(w, pg, buf));
  if ((tern_load16(buf + 10) & P_KINDS) != P_OVERFLOW || tern_load32(buf + 12) != n)
    return bad(w->path, "bad overflow page", pg);
  c->overflow += n;
  return TERN_OK;
}

/* The page list of a free-list record: counted, every page in range. */
static int check_idl(walker *w, const uint8_t *d, uint64_t dsize, uint64_t pg) {
  if (dsize < 8 || dsize % 8) return bad(w->path, "bad free-list record", pg);
  uint64_t n = tern_load64(d);
  if (n != dsize / 8 - 1) return bad(w->path, "bad free-list record length", pg);
  for (uint64_t i = 1; i <= n; i++) {
    uint64_t f = tern_load64(d + 8 * i);
    if (f < 2 || f > w->last_pg) return bad(w->path, "free page out of range", pg);
    TERN_TRY(tern_u64vec_push(&w->freed, f));
  }
  return TERN_OK;
}

/* LMDB keeps every page either in a tree or on the free list, never both
 * (its own audit, mdb_audit): a free page that a tree still uses would be
 * handed out again by the next write, which LMDB then aborts on or, worse,
 * overwrites live data with.  After the walk, when `seen` holds every
 * page reached; a page named twice is the same fault. */
static int check_freed_unused(walker *w) {
  for (size_t i = 0; i < w->freed.n; i++) {
    uint64_t p = w->freed.v[i];
    uint8_t bit = (uint8_t)(1u << (p & 7));
    if (w->seen[p >> 3] & bit) return bad(w->path, "free page in use or freed twice", p);
    w->seen[p >> 3] |= bit;
  }
  return TERN_OK;
}

static int walk_db(walker *w, const uint8_t *dbrec, tree_kind kind);

static int table_bit(const uint8_t *k, size_t n) {
  static const char *const names[4] = {"meta", "segments", "livedocs", "buffer"};
  for (int i = 0; i < 4; i++)
    if (n == strlen(names[i]) && !memcmp(k, names[i], n)) return 1 << i;
  return 0;
}

/* The state record a version 3 catalog keeps in the main database
 * (catalog_schema.h): a plain node "state" of a state record's size. */
static int is_state_node(uint16_t flags, const uint8_t *k, size_t n, uint64_t dsize) {
  return flags == 0 && n == 5 && !memcmp(k, "state", 5) &&
         dsize <= TERN_REC_STATE_MAX + TERN_REC_SEAL_SIZE;
}

/* A buffered document a version 4 catalog keeps in the main database
 * (catalog_schema.h): a plain or overflow node under 0x00 and a
 * generation, checked as a table's node. */
static int is_doc_node(uint16_t flags, const uint8_t *k, size_t n) {
  uint64_t gen;
  return (flags & ~F_BIGDATA) == 0 && tern_rec_genkey_decode(k, n, &gen);
}

static int walk_leaf_node(walker *w, const uint8_t *p, const uint8_t *node, uint64_t pg,
                          tree_kind kind, counts *c, uint8_t *scratch) {
  uint16_t flags = tern_load16(node + 4), ksize = tern_load16(node + 6);
  uint64_t dsize = tern_load16(node) | (uint64_t)tern_load16(node + 2) << 16;
  size_t off = (size_t)(node - p) + NODESIZE + ksize;
  const uint8_t *data = p + off;
  if (flags & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA) || (flags & F_DUPDATA))
    return bad(w->path, "unexpected node flags", pg);
  c->entries++;
  if (kind == TREE_TABLE) w->info->entries++;
  if (kind == TREE_MAIN && is_doc_node(flags, node + NODESIZE, ksize)) {
    w->info->entries++;
  } else if (kind == TREE_MAIN) {
    int bit = table_bit(node + NODESIZE, ksize);
    if (is_state_node(flags, node + NODESIZE, ksize, dsize))
      return off + dsize <= w->psize ? TERN_OK : bad(w->path, "node past the page", pg);
    if (flags != F_SUBDATA || dsize != DBSIZE || !bit) {
      w->info->foreign = 1; /* not tern's: leave its contents alone */
      return off + (flags & F_BIGDATA ? 8 : dsize) <= w->psize ? TERN_OK
                                                                : bad(w->path, "node past the page", pg);
    }
    if (off + DBSIZE > w->psize) return bad(w->path, "node past the page", pg);
    w->info->tables |= (unsigned)bit;
    uint8_t rec[DBSIZE];
    memcpy(rec, data, DBSIZE);
    return walk_db(w, rec, TREE_TABLE);
  }
  if (flags & F_SUBDATA) return bad(w->path, "nested database in a table", pg);
  if (flags & F_BIGDATA) {
    if (off + 8 > w->psize) return bad(w->path, "node past the page", pg);
    uint64_t opg = tern_load64(data);
    TERN_TRY(walk_overflow(w, opg, dsize, c, scratch));
    if (kind != TREE_FREE) return TERN_OK;
    uint8_t *idl = malloc(dsize ? dsize : 1);
    if (!idl) return tern_fail(TERN_ENOMEM, "catalog check: out of memory");
    int rc = cat_read(w->file, idl, dsize, opg * w->psize + PAGEHDRSZ);
    if (rc == TERN_OK) rc = check_idl(w, idl, dsize, opg);
    free(idl);
    return rc;
  }
  if (off + dsize > w->psize) return bad(w->path, "node past the page", pg);
  return kind == TREE_FREE ? check_idl(w, data, dsize, pg) : TERN_OK;
}

static int walk_page(walker *w, uint64_t pg, unsigned level, unsigned depth, tree_kind kind,
                     counts *c) {
  TERN_TRY(mark(w, pg, 1));
  uint8_t *p = malloc(2u * w->psize); /* the page, and scratch for an overflow header */
  if (!p) return tern_fail(TERN_ENOMEM, "catalog check: out of memory");
  int rc = load_page(w, pg, p);
  uint16_t kindbits = tern_load16(p + 10) & P_KINDS;
  unsigned lower = tern_load16(p + 12), upper = tern_load16(p + 14);
  int leaf = level == depth;
  if (rc == TERN_OK && kindbits != (leaf ? P_LEAF : P_BRANCH))
    rc = bad(w->path, "page of the wrong kind", pg);
  if (rc == TERN_OK && (lower < PAGEHDRSZ + 2 || (lower - PAGEHDRSZ) % 2 || lower > upper ||
                        upper > w->psize))
    rc = bad(w->path, "bad page bounds", pg);
  unsigned n = rc == TERN_OK ? (lower - PAGEHDRSZ) / 2 : 0;
  if (leaf)
    c->leaf++;
  else
    c->branch++;
  const uint8_t *prev = NULL;
  size_t prevlen = 0;
  for (unsigned i = 0; rc == TERN_OK && i < n; i++) {
    unsigned off = tern_load16(p + PAGEHDRSZ + 2 * i);
    if (off < upper || off + NODESIZE > w->psize || off % 2) {
      rc = bad(w->path, "node offset out of bounds", pg);
      break;
    }
    const uint8_t *node = p + off;
    size_t ksize = tern_load16(node + 6);
    if (off + NODESIZE + ksize > w->psize) {
      rc = bad(w->path, "key past the page", pg);
      break;
    }
    if ((leaf || i > 0) && prev && key_cmp(prev, prevlen, node + NODESIZE, ksize, kind == TREE_FREE) >= 0) {
      rc = bad(w->path, "keys out of order", pg);
      break;
    }
    if (leaf || i > 0) prev = node + NODESIZE, prevlen = ksize;
    if (leaf) {
      rc = walk_leaf_node(w, p, node, pg, kind, c, p + w->psize);
    } else {
      uint64_t child = tern_load16(node) | (uint64_t)tern_load16(node + 2) << 16 |
                       (uint64_t)tern_load16(node + 4) << 32;
      rc = walk_page(w, child, level + 1, depth, kind, c);
    }
  }
  free(p);
  return rc;
}

static int walk_db(walker *w, const uint8_t *dbrec, tree_kind kind) {
  db d = db_of(dbrec);
  if (d.root == P_INVALID_PG) {
    if (d.depth || d.entries || d.branch || d.leaf || d.overflow)
      return bad(w->path, "empty database with pages", 0);
    return TERN_OK;
  }
  if (d.depth < 1 || d.depth > MAX_DEPTH) return bad(w->path, "database depth", d.root);
  counts c = {0};
  TERN_TRY(walk_page(w, d.root, 1, d.depth, kind, &c));
  if (kind == TREE_MAIN && w->info->foreign) return TERN_OK; /* someone else's: not ours to judge */
  if (c.branch != d.branch || c.leaf != d.leaf || c.overflow != d.overflow || c.entries != d.entries)
    return bad(w->path, "database page or entry counts disagree with its tree", d.root);
  return TERN_OK;
}

int tern_catalog_walk(const char *path, uint64_t txnid, tern_catalog_walk_info *info) {
  memset(info, 0, sizeof *info);
  if (sizeof(size_t) != 8) return TERN_OK; /* the layout read here is the 64-bit one */
  int fd;
  TERN_TRY(open_catalog(path, &fd));
  int rc = tern_catalog_walk_fd(fd, path, txnid, info);
  close(fd);
  return rc;
}

int tern_catalog_walk_fd(int fd, const char *path, uint64_t txnid, tern_catalog_walk_info *info) {
  memset(info, 0, sizeof *info);
  if (sizeof(size_t) != 8) return TERN_OK; /* the layout read here is the 64-bit one */
  cat_file f = {fd, path, 0};
  meta ms[2];
  int newest, rc = TERN_OK;
  if (!metas_fast(fd, ms, &newest, &f.size)) { /* the full path says what is wrong */
    TERN_TRY(regular_size(fd, path, &f.size));
    rc = metas_read(&f, ms, &newest);
  }
  const meta *m = NULL;
  for (int i = 0; rc == TERN_OK && i < 2; i++)
    if (ms[i].txnid == txnid) m = &ms[i];
  if (rc == TERN_OK && !m) rc = tern_fail(TERN_EBUSY, "%s: meta page moved on", path);
  walker w = {&f, path, m ? m->psize : 0, m ? m->last_pg : 0, NULL, NULL, info, {0}};
  if (rc == TERN_OK) {
    w.seen = calloc((size_t)(m->last_pg / 8 + 1), 1);
    if (!w.seen) rc = tern_fail(TERN_ENOMEM, "catalog check: out of memory");
  }
  if (rc == TERN_OK) rc = walk_db(&w, m->dbs[1], TREE_MAIN);
  if (rc == TERN_OK) rc = walk_db(&w, m->dbs[0], TREE_FREE);
  if (rc == TERN_OK) rc = check_freed_unused(&w);
  free(w.freed.v);
  free(w.seen);
  return rc;
}

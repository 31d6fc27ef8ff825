/* SPDX-License-Identifier: MIT */
/*
 * pytern.h — shared declarations of the tern._tern extension module: the
 * handle objects (Index, Snapshot, Txn and the iterators), the status ->
 * exception mapping and the bytes-like argument conversion.
 *
 * Safety rules every object follows (the extension must never crash on
 * misuse):
 *  - each object holds a strong reference to the object its handle was
 *    opened on (iterator -> Snapshot -> Index), so deallocation closes
 *    children before parents;
 *  - a call that runs without the GIL marks its object "in flight" (a
 *    counter changed with the GIL held); close() refuses (BusyError) while
 *    calls are in flight or children are open, so no handle is freed under
 *    another thread;
 *  - handles used by one thread at a time (Txn, iterators) refuse a second
 *    concurrent call instead of racing.
 */
#ifndef PYTERN_H
#define PYTERN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <tern.h>

/* ---- errors.c ---- */
/* Sets the Python exception for a failed status (not TERN_OK/NOTFOUND),
 * taking tern_errmsg() of this thread; returns NULL for `return` chains. */
PyObject *pt_raise(int status);
/* Raises tern.Error subclass for `status` with a message of our own. */
PyObject *pt_raise_msg(int status, const char *msg);
/* Raises tern.NotFoundError (a KeyError) for `key`. */
PyObject *pt_raise_notfound(PyObject *key);
int pt_errors_init(PyObject *module);
/* pt_raise_msg's status for tern.ClosedError. */
#define PT_CLOSED 1

/* ---- bytesarg.c ---- */
/* A key, value or term argument: bytes (no copy), str (its UTF-8, cached
 * by the str object), or any object with the buffer protocol. */
typedef struct pt_bytes {
  const char *data;
  Py_ssize_t len;
  Py_buffer view;
  int has_view;
} pt_bytes;
int pt_bytes_get(PyObject *obj, pt_bytes *out, const char *what);
void pt_bytes_release(pt_bytes *b);
/* A growable byte arena with (offset, length) records, filled without the
 * GIL and turned into Python objects after. */
typedef struct pt_arena {
  char *buf;
  size_t len, cap;
} pt_arena;
int pt_arena_put(pt_arena *a, const void *p, size_t n, size_t *off);
void pt_arena_free(pt_arena *a);
/* The answers of a get_many: one (offset, length) record per key asked,
 * by position (length SIZE_MAX: absent), the bytes in an arena; filled
 * without the GIL, turned into a list after. */
typedef struct pt_valrec {
  size_t off, len;
} pt_valrec;
typedef struct pt_values {
  pt_arena arena;
  pt_valrec *recs;
} pt_values;
/* Records for n keys, none answered; -1 with MemoryError set. */
int pt_values_init(pt_values *v, size_t n);
/* Records the answer to key i (a tern_get_batch status and value): 0, or
 * 1 when out of memory (the batch's callback then stops it). */
int pt_values_set(pt_values *v, size_t i, int status, const void *val, size_t vlen);
/* A list of the n answers, bytes or None; NULL with an exception. */
PyObject *pt_values_list(const pt_values *v, size_t n);
void pt_values_free(pt_values *v);

/* A value read without the GIL: in `stack` when it fits, else in `heap`
 * (malloc'd). */
typedef struct pt_value {
  char stack[1024];
  char *heap;
  size_t len;
} pt_value;
/* tern_get into v, without the GIL (retries once into the heap on
 * TERN_ERANGE). */
int pt_get_raw(tern_snapshot *snap, const void *key, size_t klen, pt_value *v);
/* With the GIL: bytes on TERN_OK, dflt on TERN_NOTFOUND (NotFoundError
 * with `key` when dflt is NULL), else the exception; frees v's heap. */
PyObject *pt_value_result(int st, pt_value *v, PyObject *dflt, PyObject *key);

/* ---- index.c ---- */
/* A snapshot shared by reads (index_get.c): refs counted with the GIL. */
typedef struct pt_snapref {
  tern_snapshot *snap;
  Py_ssize_t refs;
} pt_snapref;

typedef struct pt_index {
  PyObject_HEAD
  tern_index *idx;
  pt_snapref *cached; /* the snapshot of the last one-shot read (index_get.c) */
  PyObject *path;
  int readonly;
  Py_ssize_t inflight;  /* calls running without the GIL */
  Py_ssize_t children;  /* open Snapshot and Txn objects */
  PyObject *weakrefs;
} pt_index;
extern PyTypeObject pt_index_type;
/* Index options from keyword values (NULL/None: the default); field
 * names are kept alive in the list `names`; *fo is PyMem-allocated. */
int pt_options_get(PyObject *pt, PyObject *ivm, PyObject *bb, PyObject *wbb, PyObject *ms,
                   PyObject *fields, tern_options *o, tern_field_option **fo, PyObject *names);
/* Checks the index is open (raises tern.Error otherwise). */
int pt_index_check(pt_index *self);

/* ---- index_get.c: one-shot reads on the cached snapshot ---- */
PyObject *pt_index_get(pt_index *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames);
PyObject *pt_index_getitem(pt_index *self, PyObject *key);
int pt_index_contains(pt_index *self, PyObject *key);
PyObject *pt_index_get_many(pt_index *self, PyObject *keys);
/* Drops the Index's reference to its cached snapshot (with the GIL). */
void pt_index_drop_cached(pt_index *self);

/* ---- snapshot.c ---- */
typedef struct pt_snapshot {
  PyObject_HEAD
  pt_index *index;
  tern_snapshot *snap;
  Py_ssize_t inflight;
  Py_ssize_t children;  /* open iterators */
  int owned_by_index;   /* a temporary one (Index.get): never exposed */
} pt_snapshot;
extern PyTypeObject pt_snapshot_type;
int pt_snapshot_check(pt_snapshot *self);
PyObject *pt_snapshot_new(pt_index *index);
/* Shared read bodies (Index's one-shot reads open a snapshot around them). */
PyObject *pt_snap_get(tern_snapshot *snap, PyObject *key, PyObject *dflt);
PyObject *pt_snap_get_many(tern_snapshot *snap, PyObject *keys);
PyObject *pt_snap_backup(tern_snapshot *snap, PyObject *dest);

/* ---- txn.c ---- */
extern PyTypeObject pt_txn_type;
PyObject *pt_txn_new(pt_index *index, unsigned flags);

/* ---- iter.c ---- */
extern PyTypeObject pt_scan_type;
extern PyTypeObject pt_terms_type;
PyObject *pt_scan_new(pt_snapshot *snap, PyObject *args, PyObject *kw);
PyObject *pt_terms_new(pt_snapshot *snap, PyObject *args, PyObject *kw);
/* Converts a sequence of (field, term) pairs; frees with pt_terms_free. */
typedef struct pt_termv {
  tern_term *terms;
  pt_bytes *held;   /* the term bytes */
  PyObject **fields;/* the field names as bytes objects */
  Py_ssize_t n;
} pt_termv;
int pt_termv_get(PyObject *seq, pt_termv *out);
void pt_termv_free(pt_termv *t);

/* ---- search.c ---- */
PyObject *pt_snap_search(pt_snapshot *self, PyObject *args, PyObject *kw);
PyObject *pt_snap_count(pt_snapshot *self, PyObject *args);

/* ---- sharded.c ---- */
/* _get_many_sharded(indexes, boundaries, keys): Router.get_many. */
PyObject *pt_get_many_sharded(PyObject *m, PyObject *args);

/* ---- builder.c (when tern.h has them) ---- */
#ifdef PT_HAVE_BUILDER
extern PyTypeObject pt_builder_type;
PyObject *pt_verify_segment(PyObject *m, PyObject *path);
PyObject *pt_snap_split_keys(tern_snapshot *snap, PyObject *n, PyObject *unused);
PyObject *pt_snap_export(tern_snapshot *snap, PyObject *args, PyObject *kw);
#endif
#ifdef PT_HAVE_TSV
/* ---- tsvsplit.c, tsvbuild.c: tern.dask's C path for TSV sources ---- */
PyObject *pt_tsv_sample(PyObject *m, PyObject *args);
PyObject *pt_tsv_split(PyObject *m, PyObject *args);
PyObject *pt_tsv_build(PyObject *m, PyObject *args, PyObject *kw);
#endif
#ifdef PT_HAVE_INGEST
PyObject *pt_index_ingest(pt_index *self, PyObject *args, PyObject *kw);
#endif

#endif

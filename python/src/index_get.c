/* SPDX-License-Identifier: MIT */
/*
 * index_get.c — Index's one-shot reads (get, [], in, get_many) on a cached
 * snapshot.
 *
 * Each read must see the last commit (by any process), as a snapshot
 * opened for it would; opening one costs an LMDB read transaction, more
 * than a warm lookup.  So the Index keeps the snapshot of its last read and
 * asks tern_snapshot_current (no transaction, tens of nanoseconds) whether
 * a snapshot opened now would see the same commit; only when not does it
 * open a fresh one, which replaces the cached one.  The check, the open and
 * the lookup run in one release of the GIL.
 *
 * The cached snapshot is reference counted (with the GIL held): the Index
 * holds one reference, every read in flight one more, so a read in another
 * thread keeps the snapshot it started on even when this one replaces it.
 */
#include "pytern.h"

#include <stdlib.h>

static void snapref_drop(pt_snapref *c) {
  if (!c || --c->refs > 0) return;
  tern_snapshot_close(c->snap); /* no I/O beyond unlinking files merged away */
  PyMem_Free(c);
}

void pt_index_drop_cached(pt_index *self) {
  pt_snapref *c = self->cached;
  self->cached = NULL;
  snapref_drop(c);
}

/* With the GIL: makes `fresh` (opened without it) the cached snapshot. */
static int install_fresh(pt_index *self, tern_snapshot *fresh) {
  pt_snapref *n = PyMem_Malloc(sizeof *n);
  if (!n) {
    tern_snapshot_close(fresh);
    PyErr_NoMemory();
    return -1;
  }
  n->snap = fresh;
  n->refs = 1;
  pt_index_drop_cached(self);
  self->cached = n;
  return 0;
}

/* Without the GIL: the cached snapshot `c` (NULL: none) when still
 * current, else a fresh one in *fresh.  Returns the status of the open. */
static int pick_snapshot(tern_index *idx, pt_snapref *c, tern_snapshot **use,
                         tern_snapshot **fresh) {
  int cur = 0;
  *fresh = NULL;
  if (c && tern_snapshot_current(c->snap, &cur) == TERN_OK && cur) {
    *use = c->snap;
    return TERN_OK;
  }
  int st = tern_snapshot_open(fresh, idx);
  *use = *fresh;
  return st;
}

/* Around a read: marks the call in flight and takes a reference to the
 * cached snapshot (with the GIL). */
#define READ_BEGIN(self, c)                                                                    \
  pt_snapref *c = (self)->cached;                                                              \
  if (c) c->refs++;                                                                            \
  (self)->inflight++

static int read_end(pt_index *self, pt_snapref *c, tern_snapshot *fresh) {
  self->inflight--;
  snapref_drop(c);
  return fresh ? install_fresh(self, fresh) : 0;
}

/* get(key, default=None): positional or keyword; the hot case (one
 * positional argument) costs no parsing. */
static int get_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **key,
                    PyObject **dflt) {
  *key = nargs > 0 ? args[0] : NULL;
  *dflt = nargs > 1 ? args[1] : Py_None;
  if (nargs > 2) {
    PyErr_Format(PyExc_TypeError, "get() takes at most 2 arguments (%zd given)", nargs);
    return -1;
  }
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; i++) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, i);
    int is_key = PyUnicode_CompareWithASCIIString(name, "key") == 0;
    if (!is_key && PyUnicode_CompareWithASCIIString(name, "default") != 0) {
      PyErr_Format(PyExc_TypeError, "get() got an unexpected keyword argument '%U'", name);
      return -1;
    }
    if ((is_key && *key) || (!is_key && nargs > 1)) {
      PyErr_Format(PyExc_TypeError, "get() got multiple values for argument '%U'", name);
      return -1;
    }
    *(is_key ? key : dflt) = args[nargs + i];
  }
  if (!*key) {
    PyErr_SetString(PyExc_TypeError, "get() missing required argument 'key'");
    return -1;
  }
  return 0;
}

/* The lookup of `key` in the last commit; dflt NULL: NotFoundError. */
static PyObject *index_lookup(pt_index *self, PyObject *key, PyObject *dflt) {
  if (!self->idx) return pt_raise_msg(PT_CLOSED, "the index is closed");
  pt_bytes k;
  if (pt_bytes_get(key, &k, "key") < 0) return NULL;
  pt_value v;
  int st;
  tern_snapshot *use, *fresh;
  tern_index *idx = self->idx;
  READ_BEGIN(self, c);
  Py_BEGIN_ALLOW_THREADS
  st = pick_snapshot(idx, c, &use, &fresh);
  if (st == TERN_OK) st = pt_get_raw(use, k.data, (size_t)k.len, &v);
  Py_END_ALLOW_THREADS
  pt_bytes_release(&k);
  if (read_end(self, c, fresh) < 0) {
    if (st == TERN_OK) free(v.heap);
    return NULL;
  }
  return pt_value_result(st, &v, dflt, key);
}

PyObject *pt_index_get(pt_index *self, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames) {
  PyObject *key, *dflt;
  if (nargs == 1 && !kwnames) return index_lookup(self, args[0], Py_None);
  if (get_args(args, nargs, kwnames, &key, &dflt) < 0) return NULL;
  return index_lookup(self, key, dflt);
}

PyObject *pt_index_getitem(pt_index *self, PyObject *key) {
  return index_lookup(self, key, NULL);
}

int pt_index_contains(pt_index *self, PyObject *key) {
  PyObject *r = index_lookup(self, key, Py_None);
  if (!r) return -1;
  int found = r != Py_None;
  Py_DECREF(r);
  return found;
}

/* A reference to a snapshot of the last commit (the cached one when
 * current), for a longer read done with the GIL's own releases. */
static pt_snapref *index_snapshot_ref(pt_index *self) {
  if (!self->idx) {
    pt_raise_msg(PT_CLOSED, "the index is closed");
    return NULL;
  }
  int st;
  tern_snapshot *use, *fresh;
  tern_index *idx = self->idx;
  READ_BEGIN(self, c);
  Py_BEGIN_ALLOW_THREADS
  st = pick_snapshot(idx, c, &use, &fresh);
  Py_END_ALLOW_THREADS
  self->inflight--;
  if (!fresh && st == TERN_OK) return c; /* keeps the reference taken above */
  snapref_drop(c);
  if (st) {
    pt_raise(st);
    return NULL;
  }
  if (install_fresh(self, fresh) < 0) return NULL;
  self->cached->refs++;
  return self->cached;
}

PyObject *pt_index_get_many(pt_index *self, PyObject *keys) {
  pt_snapref *c = index_snapshot_ref(self);
  if (!c) return NULL;
  self->inflight++;
  PyObject *r = pt_snap_get_many(c->snap, keys);
  self->inflight--;
  snapref_drop(c);
  return r;
}

/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c — tern.Snapshot: a read view of one commit (tern_snapshot_*),
 * its lookups (tern_get, tern_get_batch), backup, and the factories of its
 * iterators (iter.c) and searches (search.c).
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

int pt_get_raw(tern_snapshot *snap, const void *key, size_t klen, pt_value *v) {
  v->heap = NULL;
  int st = tern_get(snap, key, klen, v->stack, sizeof v->stack, &v->len);
  if (st != TERN_ERANGE) return st;
  v->heap = malloc(v->len ? v->len : 1);
  if (!v->heap) return TERN_ENOMEM;
  st = tern_get(snap, key, klen, v->heap, v->len, &v->len);
  if (st) {
    free(v->heap);
    v->heap = NULL;
  }
  return st;
}

PyObject *pt_value_result(int st, pt_value *v, PyObject *dflt, PyObject *key) {
  if (st == TERN_OK) {
    PyObject *r = PyBytes_FromStringAndSize(v->heap ? v->heap : v->stack, (Py_ssize_t)v->len);
    free(v->heap);
    return r;
  }
  if (st == TERN_NOTFOUND) {
    if (dflt) return Py_NewRef(dflt);
    return pt_raise_notfound(key);
  }
  return pt_raise(st);
}

PyObject *pt_snap_get(tern_snapshot *snap, PyObject *key, PyObject *dflt) {
  pt_bytes k;
  if (pt_bytes_get(key, &k, "key") < 0) return NULL;
  pt_value v;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = pt_get_raw(snap, k.data, (size_t)k.len, &v);
  Py_END_ALLOW_THREADS
  pt_bytes_release(&k);
  return pt_value_result(st, &v, dflt, key);
}

/* get_many: the values land in an arena without the GIL (pt_values). */
static int batch_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  return pt_values_set(payload, i, status, val, vlen); /* 1: out of memory, stop */
}

PyObject *pt_snap_get_many(tern_snapshot *snap, PyObject *keys) {
  PyObject *seq = PySequence_Fast(keys, "get_many() takes an iterable of keys");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  tern_slice *sl = PyMem_Calloc((size_t)n + 1, sizeof *sl);
  pt_bytes *held = PyMem_Calloc((size_t)n + 1, sizeof *held);
  pt_values c = {{NULL, 0, 0}, NULL};
  PyObject *r = NULL;
  Py_ssize_t got = 0;
  if (!sl || !held) {
    PyErr_NoMemory();
    goto out;
  }
  if (pt_values_init(&c, (size_t)n) < 0) goto out;
  for (; got < n; got++) {
    if (pt_bytes_get(PySequence_Fast_GET_ITEM(seq, got), &held[got], "key") < 0) goto out;
    sl[got].data = held[got].data;
    sl[got].len = (size_t)held[got].len;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_get_batch(snap, sl, (size_t)n, batch_cb, &c);
  if (st == TERN_ESTOPPED) st = TERN_ENOMEM; /* the callback stops only when out of memory */
  Py_END_ALLOW_THREADS
  r = st ? pt_raise(st) : pt_values_list(&c, (size_t)n);
out:
  for (Py_ssize_t i = 0; i < got; i++) pt_bytes_release(&held[i]);
  pt_values_free(&c);
  PyMem_Free(held);
  PyMem_Free(sl);
  Py_DECREF(seq);
  return r;
}

PyObject *pt_snap_backup(tern_snapshot *snap, PyObject *dest) {
  PyObject *d;
  if (!PyUnicode_FSConverter(dest, &d)) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_backup(snap, PyBytes_AS_STRING(d));
  Py_END_ALLOW_THREADS
  Py_DECREF(d);
  if (st) return pt_raise(st);
  Py_RETURN_NONE;
}

/* ---- the Snapshot object ---- */

PyObject *pt_snapshot_new(pt_index *index) {
  tern_snapshot *snap;
  int st;
  index->inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = tern_snapshot_open(&snap, index->idx);
  Py_END_ALLOW_THREADS
  index->inflight--;
  if (st) return pt_raise(st);
  pt_snapshot *self = PyObject_New(pt_snapshot, &pt_snapshot_type);
  if (!self) {
    tern_snapshot_close(snap);
    return NULL;
  }
  self->index = (pt_index *)Py_NewRef(index);
  self->snap = snap;
  self->inflight = 0;
  self->children = 0;
  self->owned_by_index = 0;
  index->children++;
  return (PyObject *)self;
}

int pt_snapshot_check(pt_snapshot *self) {
  if (self->snap) return 0;
  pt_raise_msg(PT_CLOSED, "the snapshot is closed");
  return -1;
}

static int close_snap(pt_snapshot *self) {
  int st;
  tern_snapshot *snap = self->snap;
  Py_BEGIN_ALLOW_THREADS
  st = tern_snapshot_close(snap);
  Py_END_ALLOW_THREADS
  if (!st) {
    self->snap = NULL;
    self->index->children--;
  }
  return st;
}

static PyObject *snap_close(pt_snapshot *self, PyObject *u) {
  (void)u;
  if (!self->snap) Py_RETURN_NONE;
  if (self->children)
    return pt_raise_msg(TERN_EBUSY, "the snapshot has iterators open (scan, terms): exhaust "
                                    "or close them first");
  if (self->inflight)
    return pt_raise_msg(TERN_EBUSY, "the snapshot is in use by another thread");
  self->inflight++;
  int st = close_snap(self);
  self->inflight--;
  if (st) return pt_raise(st);
  Py_RETURN_NONE;
}

static void snap_dealloc(pt_snapshot *self) {
  if (self->snap) close_snap(self); /* iterators hold a reference: none is open */
  Py_XDECREF(self->index);
  PyObject_Free(self);
}

static PyObject *snap_enter(pt_snapshot *self, PyObject *u) {
  (void)u;
  if (pt_snapshot_check(self) < 0) return NULL;
  return Py_NewRef(self);
}

static PyObject *snap_exit(pt_snapshot *self, PyObject *args) {
  (void)args;
  return snap_close(self, NULL);
}

/* Runs fn on the snapshot with the in-flight mark held. */
#define SNAP_CALL(self, expr)                                                                  \
  do {                                                                                         \
    if (pt_snapshot_check(self) < 0) return NULL;                                              \
    (self)->inflight++;                                                                        \
    PyObject *r_ = (expr);                                                                     \
    (self)->inflight--;                                                                        \
    return r_;                                                                                 \
  } while (0)

static PyObject *snap_get(pt_snapshot *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "default", NULL};
  PyObject *key, *dflt = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &key, &dflt)) return NULL;
  SNAP_CALL(self, pt_snap_get(self->snap, key, dflt));
}

static PyObject *snap_getitem(pt_snapshot *self, PyObject *key) {
  SNAP_CALL(self, pt_snap_get(self->snap, key, NULL));
}

static int snap_contains(pt_snapshot *self, PyObject *key) {
  if (pt_snapshot_check(self) < 0) return -1;
  self->inflight++;
  PyObject *r = pt_snap_get(self->snap, key, Py_None);
  self->inflight--;
  if (!r) return -1;
  int found = r != Py_None;
  Py_DECREF(r);
  return found;
}

static PyObject *snap_get_many(pt_snapshot *self, PyObject *keys) {
  SNAP_CALL(self, pt_snap_get_many(self->snap, keys));
}

static PyObject *snap_backup(pt_snapshot *self, PyObject *dest) {
  SNAP_CALL(self, pt_snap_backup(self->snap, dest));
}

static PyObject *snap_scan(pt_snapshot *self, PyObject *args, PyObject *kw) {
  SNAP_CALL(self, pt_scan_new(self, args, kw));
}

static PyObject *snap_terms(pt_snapshot *self, PyObject *args, PyObject *kw) {
  SNAP_CALL(self, pt_terms_new(self, args, kw));
}

static PyObject *snap_search(pt_snapshot *self, PyObject *args, PyObject *kw) {
  SNAP_CALL(self, pt_snap_search(self, args, kw));
}

static PyObject *snap_count(pt_snapshot *self, PyObject *args) {
  SNAP_CALL(self, pt_snap_count(self, args));
}

static Py_ssize_t snap_len(pt_snapshot *self) {
  if (pt_snapshot_check(self) < 0) return -1;
  uint64_t n;
  int st = tern_snapshot_count(self->snap, &n);
  if (st) return pt_raise(st), -1;
  return (Py_ssize_t)n;
}

#ifdef PT_HAVE_BUILDER
static PyObject *snap_split_keys(pt_snapshot *self, PyObject *n) {
  SNAP_CALL(self, pt_snap_split_keys(self->snap, n, NULL));
}

static PyObject *snap_export(pt_snapshot *self, PyObject *args, PyObject *kw) {
  SNAP_CALL(self, pt_snap_export(self->snap, args, kw));
}
#endif

static PyObject *snap_get_closed(pt_snapshot *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->snap == NULL);
}

static PyObject *snap_get_seq(pt_snapshot *self, void *c) {
  (void)c;
  if (!self->snap) return pt_raise_msg(PT_CLOSED, "the snapshot is closed");
  uint64_t seq;
  int st = tern_snapshot_seq(self->snap, &seq);
  return st ? pt_raise(st) : PyLong_FromUnsignedLongLong(seq);
}

static PyObject *snap_get_index(pt_snapshot *self, void *c) {
  (void)c;
  return Py_NewRef(self->index);
}

static PyObject *snap_nsegments(pt_snapshot *self, PyObject *u) {
  (void)u;
  if (pt_snapshot_check(self) < 0) return NULL;
  return PyLong_FromSize_t(tern_snapshot_nsegments(self->snap));
}

static PyMethodDef snap_methods[] = {
    {"close", (PyCFunction)snap_close, METH_NOARGS,
     "close()\n--\n\nCloses the snapshot (tern_snapshot_close); segment files later merges "
     "dropped are unlinked when no snapshot holds them.  BusyError, and nothing is closed, "
     "while iterators opened on it are open (exhaust them, call their close(), or drop "
     "them).  Twice is a no-op; later use raises ClosedError."},
    {"__enter__", (PyCFunction)snap_enter, METH_NOARGS, "Returns the snapshot itself."},
    {"__exit__", (PyCFunction)snap_exit, METH_VARARGS, "Closes the snapshot."},
    {"get", (PyCFunction)(void (*)(void))snap_get, METH_VARARGS | METH_KEYWORDS,
     "get(key, default=None)\n--\n\nReturns bytes.  The value of `key` in this snapshot, or "
     "`default` when absent (tern_get)."},
    {"get_many", (PyCFunction)snap_get_many, METH_O,
     "get_many(keys)\n--\n\nReturns list.  The values of `keys` (an iterable; any order, "
     "duplicates allowed), None for absent ones, in the order given (tern_get_batch: each "
     "block read once).  Memory: the keys and found values; split very large batches."},
    {"scan", (PyCFunction)(void (*)(void))snap_scan, METH_VARARGS | METH_KEYWORDS,
     "scan(prefix=None, start=None, stop=None, reverse=False, limit=None, values=True)"
     "\n--\n\nReturns an iterator.  The live documents in key byte order (reverse=True: descending) as "
     "(key, value) pairs, or keys alone with values=False: keys k with start <= k < stop "
     "that begin with prefix, at most `limit` of them (tern_cursor_*).  The iterator "
     "belongs to the snapshot: exhaust it, close() it or drop it before closing the "
     "snapshot.  Steps are fetched in chunks with the GIL released."},
    {"terms", (PyCFunction)(void (*)(void))snap_terms, METH_VARARGS | METH_KEYWORDS,
     "terms(field, prefix=None, start=None)\n--\n\nReturns iterator.  The terms of `field` having a "
     "live document, in byte order, as (term, docfreq) pairs: those beginning with prefix, "
     "from the first >= start (tern_terms_*).  Same lifetime rule as scan()."},
    {"search", (PyCFunction)(void (*)(void))snap_search, METH_VARARGS | METH_KEYWORDS,
     "search(*terms, values=False, limit=None)\n--\n\nReturns list.  The keys of the live documents "
     "having every one of `terms` (each a (field, term) pair), in key byte order "
     "(tern_postings_open + tern_postings_each_by_key); with values=True, (key, value) "
     "pairs.  A term no document has gives []."},
    {"count", (PyCFunction)snap_count, METH_VARARGS,
     "count(*terms)\n--\n\nReturns int.  Without terms, the number of live documents (no I/O); with "
     "(field, term) pairs, the number of live documents having them all."},
    {"backup", (PyCFunction)snap_backup, METH_O,
     "backup(dest)\n--\n\nWrites a verified, openable copy of exactly this snapshot's commit "
     "into `dest` (absent or empty) while writers go on (tern_backup)."},
#ifdef PT_HAVE_BUILDER
    {"split_keys", (PyCFunction)snap_split_keys, METH_O,
     "split_keys(n)\n--\n\nReturns list.  Up to n-1 boundary keys splitting this snapshot's live "
     "keys into n parts about equal in size (tern_split_keys)."},
    {"export", (PyCFunction)(void (*)(void))snap_export, METH_VARARGS | METH_KEYWORDS,
     "export(builder, start=None, stop=None)\n--\n\nAdds the live documents with start <= key "
     "< stop, with their values and terms, in key order, to an open Builder (tern_export); "
     "the builder stays open: finish it."},
#endif
    {"nsegments", (PyCFunction)snap_nsegments, METH_NOARGS,
     "nsegments()\n--\n\nReturns int.  The number of segments this snapshot reads."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef snap_getset[] = {
    {"closed", (getter)snap_get_closed, NULL, "True once close() succeeded.", NULL},
    {"index", (getter)snap_get_index, NULL, "The Index the snapshot was opened on.", NULL},
    {"seq", (getter)snap_get_seq, NULL,
     "The sequence number of the commit the snapshot sees (tern_snapshot_seq): what "
     "Txn.commit() returned for that commit.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods snap_as_mapping = {(lenfunc)snap_len, (binaryfunc)snap_getitem, NULL};
static PySequenceMethods snap_as_sequence = {.sq_contains = (objobjproc)snap_contains};

PyTypeObject pt_snapshot_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.Snapshot",
    .tp_basicsize = sizeof(pt_snapshot),
    .tp_dealloc = (destructor)snap_dealloc,
    .tp_as_mapping = &snap_as_mapping,
    .tp_as_sequence = &snap_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read view of one commit, frozen (made by Index.snapshot()): it sees nothing "
              "committed later, however long it is held, and the segment files it reads "
              "stay on disk until it is closed.  `len(s)` is the live document count, "
              "`key in s` and `s[key]` (NotFoundError, a KeyError) look up.  Any number of "
              "threads may read one snapshot at once; its iterators are one thread's at a "
              "time.  Use it as `with idx.snapshot() as s:`.",
    .tp_methods = snap_methods,
    .tp_getset = snap_getset,
};

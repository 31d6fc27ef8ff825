/* SPDX-License-Identifier: MIT */
/*
 * txn.c — tern.Txn: the write transaction (tern_txn_begin, tern_put,
 * tern_delete, tern_commit, tern_abort) as a context manager.
 */
#include "pytern.h"

#include <stdlib.h>

typedef struct pt_txn {
  PyObject_HEAD
  pt_index *index;
  tern_txn *txn;
  int busy; /* a call is running: one thread at a time */
  int bulk;
} pt_txn;

PyObject *pt_txn_new(pt_index *index, unsigned flags) {
  tern_txn *txn;
  int st;
  index->inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = tern_txn_begin(&txn, index->idx, flags);
  Py_END_ALLOW_THREADS
  index->inflight--;
  if (st) return pt_raise(st);
  pt_txn *self = PyObject_New(pt_txn, &pt_txn_type);
  if (!self) {
    tern_abort(txn);
    return NULL;
  }
  self->index = (pt_index *)Py_NewRef(index);
  self->txn = txn;
  self->busy = 0;
  self->bulk = (flags & TERN_TXN_BULK) != 0;
  index->children++;
  return (PyObject *)self;
}

/* Claims the transaction for one call; -1 with the exception set. */
static int claim(pt_txn *self) {
  if (!self->txn) {
    pt_raise_msg(PT_CLOSED, "the transaction is over (committed or aborted)");
    return -1;
  }
  if (self->busy) {
    pt_raise_msg(TERN_EBUSY, "the transaction is in use by another thread");
    return -1;
  }
  self->busy = 1;
  return 0;
}

/* The handle is freed by tern_commit/tern_abort whatever they return. */
static void ended(pt_txn *self) {
  self->txn = NULL;
  self->busy = 0;
  self->index->children--;
}

static PyObject *txn_put(pt_txn *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "value", "terms", "no_overwrite", NULL};
  PyObject *key, *val, *terms = NULL;
  int no_overwrite = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$p", kwlist, &key, &val, &terms, &no_overwrite))
    return NULL;
  if (claim(self) < 0) return NULL;
  pt_bytes k, v;
  pt_termv tv = {NULL, NULL, NULL, 0};
  PyObject *r = NULL;
  if (pt_bytes_get(key, &k, "key") < 0) goto out0;
  if (pt_bytes_get(val, &v, "value") < 0) goto out1;
  if (terms && terms != Py_None && pt_termv_get(terms, &tv) < 0) goto out2;
  int st;
  if (!no_overwrite) { /* memory only, no I/O: the GIL stays */
    st = tern_put(self->txn, k.data, (size_t)k.len, v.data, (size_t)v.len, tv.terms,
                  (size_t)tv.n);
  } else { /* looks the key up: the GIL is released */
    tern_txn *txn = self->txn;
    Py_BEGIN_ALLOW_THREADS
    st = tern_put_flags(txn, TERN_NOOVERWRITE, k.data, (size_t)k.len, v.data, (size_t)v.len,
                        tv.terms, (size_t)tv.n);
    Py_END_ALLOW_THREADS
  }
  r = st ? pt_raise(st) : Py_NewRef(Py_None);
  pt_termv_free(&tv);
out2:
  pt_bytes_release(&v);
out1:
  pt_bytes_release(&k);
out0:
  self->busy = 0;
  return r;
}

static PyObject *txn_delete(pt_txn *self, PyObject *key) {
  if (claim(self) < 0) return NULL;
  pt_bytes k;
  PyObject *r = NULL;
  if (pt_bytes_get(key, &k, "key") == 0) {
    int st;
    tern_txn *txn = self->txn;
    Py_BEGIN_ALLOW_THREADS
    st = tern_delete(txn, k.data, (size_t)k.len);
    Py_END_ALLOW_THREADS
    pt_bytes_release(&k);
    r = st == TERN_OK         ? Py_NewRef(Py_True)
        : st == TERN_NOTFOUND ? Py_NewRef(Py_False)
                              : pt_raise(st);
  }
  self->busy = 0;
  return r;
}

/* tern_txn_get into a growing buffer (TERN_ERANGE tells the size). */
static int txn_get_raw(tern_txn *txn, const pt_bytes *k, pt_value *v) {
  v->heap = NULL;
  int st = tern_txn_get(txn, k->data, (size_t)k->len, v->stack, sizeof v->stack, &v->len);
  if (st != TERN_ERANGE) return st;
  v->heap = malloc(v->len ? v->len : 1);
  if (!v->heap) return TERN_ENOMEM;
  st = tern_txn_get(txn, k->data, (size_t)k->len, v->heap, v->len, &v->len);
  if (st) {
    free(v->heap);
    v->heap = NULL;
  }
  return st;
}

static PyObject *txn_get(pt_txn *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "default", NULL};
  PyObject *key, *dflt = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &key, &dflt)) return NULL;
  if (claim(self) < 0) return NULL;
  pt_bytes k;
  PyObject *r = NULL;
  if (pt_bytes_get(key, &k, "key") == 0) {
    pt_value v;
    int st;
    tern_txn *txn = self->txn;
    Py_BEGIN_ALLOW_THREADS
    st = txn_get_raw(txn, &k, &v);
    Py_END_ALLOW_THREADS
    r = pt_value_result(st, &v, dflt, key);
    pt_bytes_release(&k);
  }
  self->busy = 0;
  return r;
}

/* An optional bound: None, or bytes/str into *b (*has 1). */
static int range_bound(PyObject *o, pt_bytes *b, int *has, const char *what) {
  *has = o && o != Py_None;
  return *has ? pt_bytes_get(o, b, what) : 0;
}

static PyObject *txn_delete_range(pt_txn *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"start", "stop", NULL};
  PyObject *start = NULL, *stop = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", kwlist, &start, &stop)) return NULL;
  if (claim(self) < 0) return NULL;
  pt_bytes a, b;
  int ha = 0, hb = 0;
  PyObject *r = NULL;
  if (range_bound(start, &a, &ha, "start") == 0) {
    if (range_bound(stop, &b, &hb, "stop") == 0) {
      tern_slice from = {ha ? a.data : NULL, ha ? (size_t)a.len : 0};
      tern_slice to = {hb ? b.data : NULL, hb ? (size_t)b.len : 0};
      int st = tern_delete_range(self->txn, ha ? &from : NULL, hb ? &to : NULL);
      r = st ? pt_raise(st) : Py_NewRef(Py_None);
      if (hb) pt_bytes_release(&b);
    }
    if (ha) pt_bytes_release(&a);
  }
  self->busy = 0;
  return r;
}

static PyObject *txn_commit(pt_txn *self, PyObject *u) {
  (void)u;
  if (claim(self) < 0) return NULL;
  int st;
  uint64_t seq = 0;
  tern_txn *txn = self->txn;
  Py_BEGIN_ALLOW_THREADS
  st = tern_commit_seq(txn, &seq);
  Py_END_ALLOW_THREADS
  ended(self);
  if (st) return pt_raise(st);
  return PyLong_FromUnsignedLongLong(seq);
}

static PyObject *txn_abort(pt_txn *self, PyObject *u) {
  (void)u;
  if (!self->txn) Py_RETURN_NONE;
  if (claim(self) < 0) return NULL;
  tern_abort(self->txn);
  ended(self);
  Py_RETURN_NONE;
}

static PyObject *txn_enter(pt_txn *self, PyObject *u) {
  (void)u;
  if (!self->txn) return pt_raise_msg(PT_CLOSED, "the transaction is over");
  return Py_NewRef(self);
}

static PyObject *txn_exit(pt_txn *self, PyObject *args) {
  PyObject *et = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
  if (!self->txn) Py_RETURN_NONE; /* ended inside the block */
  PyObject *r = et == Py_None ? txn_commit(self, NULL) : txn_abort(self, NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

static void txn_dealloc(pt_txn *self) {
  if (self->txn) {
    tern_abort(self->txn);
    ended(self);
  }
  Py_XDECREF(self->index);
  PyObject_Free(self);
}

static PyObject *txn_get_closed(pt_txn *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->txn == NULL);
}

static PyObject *txn_get_bulk(pt_txn *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->bulk);
}

static PyMethodDef txn_methods[] = {
    {"put", (PyCFunction)(void (*)(void))txn_put, METH_VARARGS | METH_KEYWORDS,
     "put(key, value, terms=(), *, no_overwrite=False)\n--\n\nInserts the document `key`, "
     "or replaces the one it has (value and every term).  terms: (field, term) pairs, field a "
     "str or bytes without NUL (1..FIELD_MAX bytes), term bytes or str (1..KEY_MAX bytes).  "
     "Memory only until the commit.  With no_overwrite=True a key the transaction sees "
     "(tern_put_flags with TERN_NOOVERWRITE) raises ExistsError and changes nothing.  "
     "InvalidError for a bad key, value or term (the transaction stays usable)."},
    {"get", (PyCFunction)(void (*)(void))txn_get, METH_VARARGS | METH_KEYWORDS,
     "get(key, default=None)\n--\n\nThe value of `key` as this transaction sees it "
     "(tern_txn_get): its own puts, deletes and deleted ranges first, then the commit it "
     "began on; `default` when absent.  The GIL is released."},
    {"delete_range", (PyCFunction)(void (*)(void))txn_delete_range, METH_VARARGS | METH_KEYWORDS,
     "delete_range(start=None, stop=None)\n--\n\nDeletes every document whose key k has "
     "start <= k < stop (None: unbounded) at the commit (tern_delete_range): segments "
     "wholly inside are dropped, the others' documents marked deleted, no per-key write."},
    {"delete", (PyCFunction)txn_delete, METH_O,
     "delete(key)\n--\n\nReturns bool.  Deletes the document `key`: True when the transaction saw it, "
     "False when it had none (nothing changes).  Looks the key up in the commit the "
     "transaction began on (GIL released)."},
    {"commit", (PyCFunction)txn_commit, METH_NOARGS,
     "commit()\n--\n\nReturns the commit's sequence number (tern_commit_seq; "
     "Snapshot.seq tells which commit a snapshot sees).  Makes the transaction durable and "
     "visible, and ends it (even when it fails: a failed commit changes nothing).  PartialError means the commit is durable but "
     "a flush or merge after it failed.  The GIL is released meanwhile."},
    {"abort", (PyCFunction)txn_abort, METH_NOARGS,
     "abort()\n--\n\nDrops the transaction's writes and ends it; a no-op once ended."},
    {"__enter__", (PyCFunction)txn_enter, METH_NOARGS, "Returns the transaction itself."},
    {"__exit__", (PyCFunction)txn_exit, METH_VARARGS,
     "Commits on a normal exit, aborts when the block raised (the exception propagates)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef txn_getset[] = {
    {"closed", (getter)txn_get_closed, NULL, "True once committed or aborted.", NULL},
    {"bulk", (getter)txn_get_bulk, NULL, "True for a bulk transaction (TERN_TXN_BULK).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pt_txn_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.Txn",
    .tp_basicsize = sizeof(pt_txn),
    .tp_dealloc = (destructor)txn_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The write transaction (made by Index.write()).  It reads the commit it began "
              "on; nothing it does is visible until commit() returns, and after that no "
              "crash loses it.  One exists at a time per index across threads and processes. "
              " Used by one thread at a time (a second concurrent call raises BusyError); "
              "after commit() or abort() every call raises ClosedError.  Dropped without "
              "being ended, it is aborted.",
    .tp_methods = txn_methods,
    .tp_getset = txn_getset,
};

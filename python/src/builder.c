/* SPDX-License-Identifier: MIT */
/*
 * builder.c — tern.Builder (tern_builder_*: one segment built outside any
 * index), tern.verify_segment (tern_builder_verify), and the index-side
 * calls that go with them: split_keys, export, ingest.  Compiled in only
 * when tern.h declares them (PT_HAVE_BUILDER / PT_HAVE_INGEST, set by the
 * build from the header it compiles against).
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

#ifdef PT_HAVE_BUILDER

typedef struct pt_builder {
  PyObject_HEAD
  tern_builder *b;
  PyObject *path;
  int busy;
  int failed_state; /* a write failed: only abort is left */
} pt_builder;

static int builder_claim(pt_builder *self) {
  if (!self->b) {
    pt_raise_msg(PT_CLOSED, "the builder is over (finished or aborted)");
    return -1;
  }
  if (self->busy) {
    pt_raise_msg(TERN_EBUSY, "the builder is in use by another thread");
    return -1;
  }
  self->busy = 1;
  return 0;
}

static int builder_init(pt_builder *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "pulsing_threshold", "inline_value_max",
                           "bloom_bits_per_key", "fields", NULL};
  PyObject *path = NULL, *pt = NULL, *ivm = NULL, *bb = NULL, *fields = NULL;
  if (self->b) {
    pt_raise_msg(TERN_EINVAL, "Builder.__init__ called twice");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$OOOO", kwlist, PyUnicode_FSConverter, &path,
                                   &pt, &ivm, &bb, &fields))
    return -1;
  tern_options o;
  tern_field_option *fo = NULL;
  PyObject *names = PyList_New(0);
  int rc = -1;
  if (!names || pt_options_get(pt, ivm, bb, NULL, NULL, fields, &o, &fo, names) < 0) goto out;
  tern_builder *b;
  int st;
  const char *p = PyBytes_AS_STRING(path);
  Py_BEGIN_ALLOW_THREADS
  st = tern_builder_open(&b, p, &o);
  Py_END_ALLOW_THREADS
  if (st) {
    pt_raise(st);
    goto out;
  }
  self->b = b;
  self->path = PyUnicode_DecodeFSDefault(p);
  rc = self->path ? 0 : -1;
out:
  PyMem_Free(fo);
  Py_XDECREF(names);
  Py_XDECREF(path);
  return rc;
}

static int add_one(pt_builder *self, PyObject *key, PyObject *val, PyObject *terms) {
  pt_bytes k, v;
  pt_termv tv = {NULL, NULL, NULL, 0};
  int rc = -1;
  if (pt_bytes_get(key, &k, "key") < 0) return -1;
  if (pt_bytes_get(val, &v, "value") < 0) goto out1;
  if (terms && terms != Py_None && pt_termv_get(terms, &tv) < 0) goto out2;
  int st;
  tern_builder *b = self->b;
  Py_BEGIN_ALLOW_THREADS
  st = tern_builder_add(b, k.data, (size_t)k.len, v.data, (size_t)v.len, tv.terms,
                        (size_t)tv.n);
  Py_END_ALLOW_THREADS
  if (st) pt_raise(st);
  else rc = 0;
  pt_termv_free(&tv);
out2:
  pt_bytes_release(&v);
out1:
  pt_bytes_release(&k);
  return rc;
}

static PyObject *builder_add(pt_builder *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "value", "terms", NULL};
  PyObject *key, *val, *terms = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", kwlist, &key, &val, &terms)) return NULL;
  if (builder_claim(self) < 0) return NULL;
  int rc = add_one(self, key, val, terms);
  self->busy = 0;
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

/* add_many: records without terms go in runs of up to RUN per release of
 * the GIL; a record with terms goes alone, after the run before it. */
#define RUN 256

typedef struct run {
  PyObject *held[RUN];
  pt_bytes ks[RUN], vs[RUN];
  size_t n;
} run;

static void run_drop(run *r) {
  for (size_t j = 0; j < r->n; j++) {
    pt_bytes_release(&r->ks[j]);
    pt_bytes_release(&r->vs[j]);
    Py_DECREF(r->held[j]);
  }
  r->n = 0;
}

/* Adds the pending run; counts the documents added into *total. */
static int run_flush(pt_builder *self, run *r, size_t *total) {
  if (!r->n) return 0;
  int st = 0;
  size_t i = 0, n = r->n;
  tern_builder *b = self->b;
  Py_BEGIN_ALLOW_THREADS
  for (; i < n && !st; i++)
    st = tern_builder_add(b, r->ks[i].data, (size_t)r->ks[i].len, r->vs[i].data,
                          (size_t)r->vs[i].len, NULL, 0);
  Py_END_ALLOW_THREADS
  *total += st ? i - 1 : n;
  run_drop(r);
  if (st) pt_raise(st);
  return st ? -1 : 0;
}

/* One record into the run (or, with terms, added alone after the run). */
static int add_record(pt_builder *self, run *r, PyObject *rec, size_t *total) {
  PyObject *t = PySequence_Fast(rec, "each record must be (key, value[, terms])");
  if (!t) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(t);
  if (len < 2 || len > 3) {
    Py_DECREF(t);
    PyErr_SetString(PyExc_TypeError, "each record must be (key, value[, terms])");
    return -1;
  }
  PyObject **it = PySequence_Fast_ITEMS(t);
  int rc = 0;
  if (len == 3 && it[2] != Py_None) {
    if ((rc = run_flush(self, r, total)) == 0 && (rc = add_one(self, it[0], it[1], it[2])) == 0)
      (*total)++;
    Py_DECREF(t);
    return rc;
  }
  if (r->n == RUN && run_flush(self, r, total) < 0) {
    Py_DECREF(t);
    return -1;
  }
  if (pt_bytes_get(it[0], &r->ks[r->n], "key") < 0) {
    Py_DECREF(t);
    return -1;
  }
  if (pt_bytes_get(it[1], &r->vs[r->n], "value") < 0) {
    pt_bytes_release(&r->ks[r->n]);
    Py_DECREF(t);
    return -1;
  }
  r->held[r->n++] = t;
  return 0;
}

static PyObject *builder_add_many(pt_builder *self, PyObject *records) {
  if (builder_claim(self) < 0) return NULL;
  PyObject *iter = PyObject_GetIter(records);
  if (!iter) {
    self->busy = 0;
    return NULL;
  }
  run *r = PyMem_Malloc(sizeof *r);
  if (!r) {
    Py_DECREF(iter);
    self->busy = 0;
    return PyErr_NoMemory();
  }
  r->n = 0;
  size_t total = 0;
  int err = 0;
  PyObject *rec;
  while (!err && (rec = PyIter_Next(iter)) != NULL) {
    err = add_record(self, r, rec, &total) < 0;
    Py_DECREF(rec);
  }
  if (!err && !PyErr_Occurred()) err = run_flush(self, r, &total) < 0;
  run_drop(r); /* what an error left pending */
  PyMem_Free(r);
  Py_DECREF(iter);
  self->busy = 0;
  if (err || PyErr_Occurred()) return NULL;
  return PyLong_FromSize_t(total);
}

static PyObject *info_dict(const tern_build_info *info, PyObject *path) {
  return Py_BuildValue("{sKsy#sy#sKsssO}", "documents", (unsigned long long)info->documents,
                       "first_key", (const char *)info->first_key, (Py_ssize_t)info->first_len,
                       "last_key", (const char *)info->last_key, (Py_ssize_t)info->last_len,
                       "bytes", (unsigned long long)info->bytes, "name", info->name, "path",
                       path ? path : Py_None);
}

static PyObject *builder_finish(pt_builder *self, PyObject *u) {
  (void)u;
  if (builder_claim(self) < 0) return NULL;
  tern_build_info info;
  int st;
  tern_builder *b = self->b;
  Py_BEGIN_ALLOW_THREADS
  st = tern_builder_finish(b, &info);
  Py_END_ALLOW_THREADS
  self->b = NULL; /* freed whatever the outcome */
  self->busy = 0;
  if (st) return pt_raise(st);
  return info_dict(&info, self->path);
}

static PyObject *builder_abort(pt_builder *self, PyObject *u) {
  (void)u;
  if (!self->b) Py_RETURN_NONE;
  if (builder_claim(self) < 0) return NULL;
  tern_builder *b = self->b;
  Py_BEGIN_ALLOW_THREADS
  tern_builder_abort(b);
  Py_END_ALLOW_THREADS
  self->b = NULL;
  self->busy = 0;
  Py_RETURN_NONE;
}

static PyObject *builder_enter(pt_builder *self, PyObject *u) {
  (void)u;
  if (!self->b) return pt_raise_msg(PT_CLOSED, "the builder is over");
  return Py_NewRef(self);
}

static PyObject *builder_exit(pt_builder *self, PyObject *args) {
  PyObject *et = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
  if (!self->b) Py_RETURN_FALSE;
  PyObject *r = et == Py_None ? builder_finish(self, NULL) : builder_abort(self, NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

static void builder_dealloc(pt_builder *self) {
  if (self->b) tern_builder_abort(self->b);
  Py_XDECREF(self->path);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *builder_get_closed(pt_builder *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->b == NULL);
}

static PyObject *builder_get_path(pt_builder *self, void *c) {
  (void)c;
  return Py_NewRef(self->path ? self->path : Py_None);
}

static PyMethodDef builder_methods[] = {
    {"add", (PyCFunction)(void (*)(void))builder_add, METH_VARARGS | METH_KEYWORDS,
     "add(key, value, terms=())\n--\n\nAdds a document; keys strictly increasing in byte order "
     "(InvalidError naming both keys otherwise, and the builder stays usable).  Arguments as "
     "Txn.put."},
    {"add_many", (PyCFunction)builder_add_many, METH_O,
     "add_many(records)\n--\n\nReturns int.  Adds (key, value) or (key, value, terms) records from an "
     "iterable, in increasing key order, releasing the GIL once per run of records; returns "
     "how many were added (the ones before an error stay added)."},
    {"finish", (PyCFunction)builder_finish, METH_NOARGS,
     "finish()\n--\n\nReturns dict.  Writes the segment's terms, index and filter, fsyncs, and renames "
     "PATH.tmp to PATH: durable on return.  Returns {documents, first_key, last_key, bytes, "
     "name, path}.  The builder is over whatever the outcome."},
    {"abort", (PyCFunction)builder_abort, METH_NOARGS,
     "abort()\n--\n\nDrops what was built (removes PATH.tmp); a no-op once over."},
    {"__enter__", (PyCFunction)builder_enter, METH_NOARGS, "Returns the builder itself."},
    {"__exit__", (PyCFunction)builder_exit, METH_VARARGS,
     "Finishes on a normal exit, aborts when the block raised."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef builder_getset[] = {
    {"closed", (getter)builder_get_closed, NULL, "True once finished or aborted.", NULL},
    {"path", (getter)builder_get_path, NULL, "The directory the segment is built into.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pt_builder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.Builder",
    .tp_basicsize = sizeof(pt_builder),
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Builder(path, *, pulsing_threshold=None, inline_value_max=None, "
              "bloom_bits_per_key=None, fields=None)\n--\n\n"
              "Builds one segment outside any index into directory `path` (absent or empty; "
              "its parent must exist), from documents added in increasing key order "
              "(tern_builder_open): files are written under PATH.tmp and renamed to PATH by "
              "finish(), so an interrupted build never leaves a finished-looking PATH.  The "
              "options must match those of the index that will ingest it.  Use it as `with "
              "tern.Builder(p) as b:` (finish on a normal exit, abort on an exception).  "
              "Memory: keys and values stream to disk; the secondary terms are held until "
              "finish.  One thread at a time.",
    .tp_methods = builder_methods,
    .tp_getset = builder_getset,
    .tp_init = (initproc)builder_init,
    .tp_new = PyType_GenericNew,
};

PyObject *pt_verify_segment(PyObject *m, PyObject *path) {
  (void)m;
  PyObject *p;
  if (!PyUnicode_FSConverter(path, &p)) return NULL;
  tern_build_info info;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_builder_verify(PyBytes_AS_STRING(p), &info);
  Py_END_ALLOW_THREADS
  Py_DECREF(p);
  if (st) return pt_raise(st);
  return info_dict(&info, path);
}

PyObject *pt_snap_split_keys(tern_snapshot *snap, PyObject *nobj, PyObject *unused) {
  (void)unused;
  Py_ssize_t n = PyLong_AsSsize_t(nobj);
  if (n == -1 && PyErr_Occurred()) return NULL;
  if (n < 1) return pt_raise_msg(TERN_EINVAL, "split_keys needs n >= 1");
  tern_slice *keys = PyMem_Calloc((size_t)n, sizeof *keys);
  if (!keys) return PyErr_NoMemory();
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_split_keys(snap, (size_t)n, keys);
  Py_END_ALLOW_THREADS
  PyObject *list = st ? pt_raise(st) : PyList_New(0);
  for (Py_ssize_t i = 0; i + 1 < n; i++) {
    if (list && keys[i].len) {
      PyObject *b = PyBytes_FromStringAndSize(keys[i].data, (Py_ssize_t)keys[i].len);
      if (!b || PyList_Append(list, b) < 0) Py_CLEAR(list);
      Py_XDECREF(b);
    }
    free((void *)keys[i].data);
  }
  PyMem_Free(keys);
  return list;
}

PyObject *pt_snap_export(tern_snapshot *snap, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"builder", "start", "stop", NULL};
  PyObject *bobj, *start = Py_None, *stop = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|OO", kwlist, &pt_builder_type, &bobj, &start,
                                   &stop))
    return NULL;
  pt_builder *b = (pt_builder *)bobj;
  pt_bytes s = {NULL, 0, {0}, 0}, e = {NULL, 0, {0}, 0};
  tern_slice from = {NULL, 0}, to = {NULL, 0};
  if (start != Py_None) {
    if (pt_bytes_get(start, &s, "start") < 0) return NULL;
    from.data = s.data;
    from.len = (size_t)s.len;
  }
  if (stop != Py_None) {
    if (pt_bytes_get(stop, &e, "stop") < 0) {
      pt_bytes_release(&s);
      return NULL;
    }
    to.data = e.data;
    to.len = (size_t)e.len;
  }
  PyObject *r = NULL;
  if (builder_claim(b) == 0) {
    int st;
    tern_builder *tb = b->b;
    Py_BEGIN_ALLOW_THREADS
    st = tern_export(snap, from.data ? &from : NULL, to.data ? &to : NULL, tb);
    Py_END_ALLOW_THREADS
    b->busy = 0;
    r = st ? pt_raise(st) : Py_NewRef(Py_None);
  }
  pt_bytes_release(&s);
  pt_bytes_release(&e);
  return r;
}

#endif /* PT_HAVE_BUILDER */

#ifdef PT_HAVE_INGEST
PyObject *pt_index_ingest(pt_index *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"paths", "behind", NULL};
  PyObject *paths;
  int behind = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", kwlist, &paths, &behind)) return NULL;
  if (pt_index_check(self) < 0) return NULL;
  if (PyUnicode_Check(paths) || PyBytes_Check(paths))
    return PyErr_Format(PyExc_TypeError, "ingest() takes a list of segment directories");
  PyObject *seq = PySequence_Fast(paths, "ingest() takes a list of segment directories");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **held = PyMem_Calloc((size_t)n + 1, sizeof *held);
  const char **cp = PyMem_Calloc((size_t)n + 1, sizeof *cp);
  PyObject *r = NULL;
  Py_ssize_t got = 0;
  if (!held || !cp) {
    PyErr_NoMemory();
    goto out;
  }
  for (; got < n; got++) {
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, got), &held[got])) goto out;
    cp[got] = PyBytes_AS_STRING(held[got]);
  }
  int st;
  self->inflight++;
  tern_index *idx = self->idx;
  Py_BEGIN_ALLOW_THREADS
  st = tern_ingest(idx, cp, (size_t)n, behind ? TERN_INGEST_BEHIND : 0);
  Py_END_ALLOW_THREADS
  self->inflight--;
  r = st ? pt_raise(st) : Py_NewRef(Py_None);
out:
  for (Py_ssize_t i = 0; i < got; i++) Py_DECREF(held[i]);
  PyMem_Free(held);
  PyMem_Free(cp);
  Py_DECREF(seq);
  return r;
}
#endif

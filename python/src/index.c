/* SPDX-License-Identifier: MIT */
/*
 * index.c — tern.Index: an open index directory (tern_open / tern_close),
 * its one-shot reads (each on a snapshot of the last commit), transactions,
 * snapshots and maintenance.
 */
#include "pytern.h"

#include <string.h>

int pt_index_check(pt_index *self) {
  if (self->idx) return 0;
  pt_raise_msg(PT_CLOSED, "the index is closed");
  return -1;
}

static int set_u32(PyObject *v, uint32_t *out, const char *name) {
  if (!v || v == Py_None) return 0;
  unsigned long x = PyLong_AsUnsignedLong(v);
  if (PyErr_Occurred()) return -1;
  if (x > UINT32_MAX) {
    PyErr_Format(PyExc_OverflowError, "%s is too large", name);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

static int set_u64(PyObject *v, uint64_t *out) {
  if (!v || v == Py_None) return 0;
  unsigned long long x = PyLong_AsUnsignedLongLong(v);
  if (PyErr_Occurred()) return -1;
  *out = x;
  return 0;
}

/* fields={"name": threshold, ...} -> tern_field_option[]; the names stay
 * alive in `names` (a list of bytes) until tern_open copied them. */
static int get_fields(PyObject *fields, tern_field_option **out, size_t *n, PyObject *names) {
  *out = NULL;
  *n = 0;
  if (!fields || fields == Py_None) return 0;
  if (!PyDict_Check(fields)) {
    PyErr_SetString(PyExc_TypeError, "fields must be a dict {field name: pulsing threshold}");
    return -1;
  }
  Py_ssize_t cnt = PyDict_Size(fields), pos = 0, i = 0;
  *out = PyMem_Calloc((size_t)cnt + 1, sizeof **out);
  if (!*out) return PyErr_NoMemory(), -1;
  PyObject *k, *v;
  while (PyDict_Next(fields, &pos, &k, &v)) {
    PyObject *b = PyUnicode_Check(k) ? PyUnicode_AsUTF8String(k) : (Py_INCREF(k), k);
    if (!b) return -1;
    if (!PyBytes_Check(b)) {
      Py_DECREF(b);
      PyErr_SetString(PyExc_TypeError, "field names must be str or bytes");
      return -1;
    }
    int r = PyList_Append(names, b);
    Py_DECREF(b);
    if (r < 0 || set_u32(v, &(*out)[i].threshold, "threshold") < 0) return -1;
    (*out)[i++].field = PyBytes_AS_STRING(b);
  }
  *n = (size_t)i;
  return 0;
}

int pt_options_get(PyObject *pt, PyObject *ivm, PyObject *bb, PyObject *wbb, PyObject *ms,
                   PyObject *fields, tern_options *o, tern_field_option **fo, PyObject *names) {
  tern_options_init(o);
  if (set_u32(pt, &o->pulsing_threshold, "pulsing_threshold") < 0 ||
      set_u32(ivm, &o->inline_value_max, "inline_value_max") < 0 ||
      set_u32(bb, &o->bloom_bits_per_key, "bloom_bits_per_key") < 0 ||
      set_u64(wbb, &o->write_buffer_bytes) < 0 || set_u64(ms, &o->map_size) < 0 ||
      get_fields(fields, fo, &o->nfields, names) < 0)
    return -1;
  o->fields = *fo;
  return 0;
}

static int index_init(pt_index *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "create", "readonly", "pread", "foreground",
                           "pulsing_threshold", "inline_value_max", "bloom_bits_per_key",
                           "write_buffer_bytes", "map_size", "fields", "busy_timeout_ms",
                           "merge_factor", NULL};
  PyObject *path = NULL, *pt = NULL, *ivm = NULL, *bb = NULL, *wbb = NULL, *ms = NULL,
           *fields = NULL, *busy = NULL, *mf = NULL;
  int create = 0, readonly = 0, pread_ = 0, fg = 0;
  if (self->idx) {
    pt_raise_msg(TERN_EINVAL, "Index.__init__ called twice");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$ppppOOOOOOOO", kwlist, PyUnicode_FSConverter,
                                   &path, &create, &readonly, &pread_, &fg, &pt, &ivm, &bb,
                                   &wbb, &ms, &fields, &busy, &mf))
    return -1;
  tern_options o;
  tern_field_option *fo = NULL;
  PyObject *names = PyList_New(0);
  int rc = -1;
  if (!names || pt_options_get(pt, ivm, bb, wbb, ms, fields, &o, &fo, names) < 0) goto out;
  if (set_u32(busy, &o.busy_timeout_ms, "busy_timeout_ms") < 0) goto out;
  if (set_u32(mf, &o.merge_factor, "merge_factor") < 0) goto out;
  unsigned flags = (create ? TERN_CREATE : 0) | (readonly ? TERN_RDONLY : 0) |
                   (pread_ ? TERN_PREAD : 0) | (fg ? TERN_FOREGROUND : 0);
  const char *dir = PyBytes_AS_STRING(path);
  tern_index *idx;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_open(&idx, dir, flags, &o);
  Py_END_ALLOW_THREADS
  if (st) {
    pt_raise(st);
    goto out;
  }
  self->idx = idx;
  self->readonly = readonly;
  self->path = PyUnicode_DecodeFSDefault(dir);
  rc = self->path ? 0 : -1;
out:
  PyMem_Free(fo);
  Py_XDECREF(names);
  Py_XDECREF(path);
  return rc;
}

static int close_handle(pt_index *self) {
  int st;
  tern_index *idx = self->idx;
  Py_BEGIN_ALLOW_THREADS
  st = tern_close(idx);
  Py_END_ALLOW_THREADS
  if (!st) self->idx = NULL;
  return st;
}

static PyObject *index_close(pt_index *self, PyObject *unused) {
  (void)unused;
  if (!self->idx) Py_RETURN_NONE;
  if (self->inflight || self->children)
    return pt_raise_msg(TERN_EBUSY, "the index has open snapshots or transactions, or calls "
                                    "running in other threads: close those first");
  pt_index_drop_cached(self);
  self->inflight++; /* no other thread starts on it while tern_close runs */
  int st = close_handle(self);
  self->inflight--;
  if (st) return pt_raise(st);
  Py_RETURN_NONE;
}

static void index_dealloc(pt_index *self) {
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  /* Children hold a reference: none is open here. */
  pt_index_drop_cached(self);
  if (self->idx) close_handle(self);
  Py_XDECREF(self->path);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *index_enter(pt_index *self, PyObject *unused) {
  (void)unused;
  if (pt_index_check(self) < 0) return NULL;
  return Py_NewRef(self);
}

static PyObject *index_exit(pt_index *self, PyObject *args) {
  (void)args;
  return index_close(self, NULL);
}

static PyObject *index_snapshot(pt_index *self, PyObject *unused) {
  (void)unused;
  if (pt_index_check(self) < 0) return NULL;
  return pt_snapshot_new(self);
}

static PyObject *index_write(pt_index *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"bulk", NULL};
  int bulk = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &bulk)) return NULL;
  if (pt_index_check(self) < 0) return NULL;
  return pt_txn_new(self, bulk ? TERN_TXN_BULK : 0);
}

/* One-shot reads: a snapshot of the last commit around one call. */
typedef PyObject *(*snap_call)(tern_snapshot *, PyObject *, PyObject *);

static PyObject *with_snapshot(pt_index *self, snap_call fn, PyObject *a, PyObject *b) {
  if (pt_index_check(self) < 0) return NULL;
  tern_snapshot *snap;
  int st;
  self->inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = tern_snapshot_open(&snap, self->idx);
  Py_END_ALLOW_THREADS
  PyObject *r = st ? pt_raise(st) : fn(snap, a, b);
  if (!st) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    tern_snapshot_close(snap); /* no I/O beyond unlinking dropped files */
    PyErr_Restore(et, ev, tb);
  }
  self->inflight--;
  return r;
}

static PyObject *backup_call(tern_snapshot *snap, PyObject *dest, PyObject *unused) {
  (void)unused;
  return pt_snap_backup(snap, dest);
}

static PyObject *index_backup(pt_index *self, PyObject *dest) {
  return with_snapshot(self, backup_call, dest, NULL);
}

static PyObject *maint(pt_index *self, int (*fn)(tern_index *)) {
  if (pt_index_check(self) < 0) return NULL;
  int st;
  self->inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = fn(self->idx);
  Py_END_ALLOW_THREADS
  self->inflight--;
  if (st) return pt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *index_verify(pt_index *self, PyObject *u) {
  (void)u;
  return maint(self, tern_verify);
}
static PyObject *index_compact(pt_index *self, PyObject *u) {
  (void)u;
  pt_index_drop_cached(self); /* the catalog shrinks only with no snapshot open */
  return maint(self, tern_compact);
}
static PyObject *index_flush(pt_index *self, PyObject *u) {
  (void)u;
  return maint(self, tern_flush);
}

static int dset(PyObject *d, const char *k, PyObject *v) {
  if (!v) return -1;
  int r = PyDict_SetItemString(d, k, v);
  Py_DECREF(v);
  return r;
}

static PyObject *segment_dict(const tern_segment_stats *s) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  if (dset(d, "id", PyLong_FromUnsignedLongLong(s->id)) < 0 ||
      dset(d, "max_doc", PyLong_FromUnsignedLongLong(s->max_doc)) < 0 ||
      dset(d, "deleted", PyLong_FromUnsignedLongLong(s->deleted)) < 0 ||
      dset(d, "livedocs_form", PyUnicode_FromString(s->livedocs_form)) < 0 ||
      dset(d, "livedocs_bytes", PyLong_FromUnsignedLongLong(s->livedocs_bytes)) < 0 ||
      dset(d, "terms", PyLong_FromUnsignedLongLong(s->terms)) < 0 ||
      dset(d, "pulsed_terms", PyLong_FromUnsignedLongLong(s->pulsed_terms)) < 0 ||
      dset(d, "bytes_terms", PyLong_FromUnsignedLongLong(s->bytes_terms)) < 0 ||
      dset(d, "bytes_index", PyLong_FromUnsignedLongLong(s->bytes_index)) < 0 ||
      dset(d, "bytes_postings", PyLong_FromUnsignedLongLong(s->bytes_postings)) < 0 ||
      dset(d, "bytes_filter", PyLong_FromUnsignedLongLong(s->bytes_filter)) < 0 ||
      dset(d, "bytes_values", PyLong_FromUnsignedLongLong(s->bytes_values)) < 0 ||
      dset(d, "bytes", PyLong_FromUnsignedLongLong(s->bytes)) < 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static PyObject *stats_dict(const tern_stats *s) {
  PyObject *d = PyDict_New(), *segs = PyList_New(0);
  if (!d || !segs) goto fail;
  for (size_t i = 0; i < s->nsegments; i++) {
    PyObject *sd = segment_dict(&s->segments[i]);
    if (!sd || PyList_Append(segs, sd) < 0) {
      Py_XDECREF(sd);
      goto fail;
    }
    Py_DECREF(sd);
  }
  if (dset(d, "docs", PyLong_FromUnsignedLongLong(s->docs)) < 0 ||
      dset(d, "deleted", PyLong_FromUnsignedLongLong(s->deleted)) < 0 ||
      dset(d, "buffered", PyLong_FromUnsignedLongLong(s->buffered)) < 0 ||
      dset(d, "last_error", PyLong_FromLong(s->last_error)) < 0 ||
      dset(d, "last_error_msg", PyUnicode_DecodeUTF8(s->last_error_msg,
                                                     (Py_ssize_t)strlen(s->last_error_msg),
                                                     "backslashreplace")) < 0 ||
      dset(d, "last_error_commit", PyLong_FromUnsignedLongLong(s->last_error_commit)) < 0 ||
      dset(d, "skipped", PyLong_FromSize_t(s->nskipped)) < 0 ||
      dset(d, "catalog_bytes", PyLong_FromUnsignedLongLong(s->catalog_bytes)) < 0 ||
      dset(d, "filter_bytes", PyLong_FromUnsignedLongLong(s->filter_bytes)) < 0 ||
      PyDict_SetItemString(d, "segments", segs) < 0)
    goto fail;
  Py_DECREF(segs);
  return d;
fail:
  Py_XDECREF(d);
  Py_XDECREF(segs);
  return NULL;
}

static PyObject *index_stats(pt_index *self, PyObject *u) {
  (void)u;
  if (pt_index_check(self) < 0) return NULL;
  tern_stats *s;
  int st;
  self->inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = tern_stats_get(&s, self->idx);
  Py_END_ALLOW_THREADS
  self->inflight--;
  if (st) return pt_raise(st);
  PyObject *d = stats_dict(s);
  tern_stats_free(s);
  return d;
}

static PyObject *index_options(pt_index *self, PyObject *u) {
  (void)u;
  if (pt_index_check(self) < 0) return NULL;
  tern_options o;
  int st = tern_get_options(self->idx, &o);
  if (st) return pt_raise(st);
  PyObject *fields = PyDict_New();
  if (!fields) return NULL;
  for (size_t i = 0; i < o.nfields; i++)
    if (dset(fields, o.fields[i].field, PyLong_FromUnsignedLong(o.fields[i].threshold)) < 0) {
      Py_DECREF(fields);
      return NULL;
    }
  return Py_BuildValue("{sIsIsIsKsKsNsI}", "pulsing_threshold", o.pulsing_threshold,
                       "inline_value_max", o.inline_value_max, "bloom_bits_per_key",
                       o.bloom_bits_per_key, "write_buffer_bytes",
                       (unsigned long long)o.write_buffer_bytes, "map_size",
                       (unsigned long long)o.map_size, "fields", fields, "merge_factor",
                       o.merge_factor);
}

#ifdef PT_HAVE_BUILDER
static PyObject *index_split_keys(pt_index *self, PyObject *n) {
  return with_snapshot(self, pt_snap_split_keys, n, NULL);
}
#endif

static PyObject *index_repr(pt_index *self) {
  return PyUnicode_FromFormat("<tern.Index %R%s>", self->path ? self->path : Py_None,
                              self->idx ? (self->readonly ? " read-only" : "") : " closed");
}

static PyObject *get_closed(pt_index *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->idx == NULL);
}
static PyObject *get_path(pt_index *self, void *c) {
  (void)c;
  return Py_NewRef(self->path ? self->path : Py_None);
}
static PyObject *get_readonly(pt_index *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->readonly);
}

static PyMethodDef index_methods[] = {
    {"close", (PyCFunction)index_close, METH_NOARGS,
     "close()\n--\n\nCloses the index (tern_close), waiting for the background worker's "
     "flush or merge in flight.  BusyError, and nothing is closed, while snapshots, a "
     "transaction or iterators are open or another thread is in a call on it.  Closing "
     "twice is a no-op; every later use raises ClosedError."},
    {"__enter__", (PyCFunction)index_enter, METH_NOARGS, "Returns the index itself."},
    {"__exit__", (PyCFunction)index_exit, METH_VARARGS, "Closes the index."},
    {"snapshot", (PyCFunction)index_snapshot, METH_NOARGS,
     "snapshot()\n--\n\nReturns Snapshot.  A read view of the last commit, frozen (tern_snapshot_open"
     "): use it as `with idx.snapshot() as s:`.  Cheap when nothing was committed since the "
     "last one.  A snapshot pins the segment files it reads: close it when done."},
    {"write", (PyCFunction)(void (*)(void))index_write, METH_VARARGS | METH_KEYWORDS,
     "write(bulk=False)\n--\n\nReturns Txn.  Begins the write transaction (tern_txn_begin): use it "
     "as `with idx.write() as txn:`; it commits on a normal exit and aborts on an exception.  "
     "bulk=True (TERN_TXN_BULK) holds every document in memory and writes them as one "
     "segment at commit: the way to import many documents.  BusyError at once when another "
     "transaction, flush or compaction is open (any thread or process)."},
    {"get", (PyCFunction)(void (*)(void))pt_index_get, METH_FASTCALL | METH_KEYWORDS,
     "get(key, default=None)\n--\n\nReturns bytes.  The value of `key` in the last commit (by "
     "any process), or `default` when absent.  Reads through the snapshot of the index's "
     "last one-shot read, re-opened only when the index changed since "
     "(tern_snapshot_current): as cheap as Snapshot.get while nothing is committed."},
    {"get_many", (PyCFunction)pt_index_get_many, METH_O,
     "get_many(keys)\n--\n\nReturns list.  The values of `keys` (any iterable; any order, duplicates "
     "allowed) in the last commit, None for absent ones, in the order given: one "
     "tern_get_batch, which reads each block once."},
    {"backup", (PyCFunction)index_backup, METH_O,
     "backup(dest)\n--\n\nWrites a verified, openable copy of the last commit into `dest` "
     "(absent or empty) while writers go on (tern_backup)."},
    {"verify", (PyCFunction)index_verify, METH_NOARGS,
     "verify()\n--\n\nChecks every checksum and invariant of the last commit (reads the whole "
     "index); CorruptError naming the file when unsound."},
    {"compact", (PyCFunction)index_compact, METH_NOARGS,
     "compact()\n--\n\nMerges everything into one segment without deleted documents, and "
     "shrinks the catalog when this handle holds the directory alone (tern_compact)."},
    {"flush", (PyCFunction)index_flush, METH_NOARGS,
     "flush()\n--\n\nWrites the buffered writes as a segment and runs the merges due; a "
     "barrier for the background worker (tern_flush)."},
    {"stats", (PyCFunction)index_stats, METH_NOARGS,
     "stats()\n--\n\nReturns dict.  Statistics of the last commit (tern_stats_get): docs, deleted, "
     "buffered, last_error, last_error_msg, last_error_commit, skipped, catalog_bytes, "
     "filter_bytes and "
     "segments, a list of dicts (id, max_doc, deleted, livedocs_form, livedocs_bytes, terms, "
     "pulsed_terms, bytes_terms, bytes_index, bytes_postings, bytes_filter, bytes_values, "
     "bytes), oldest first."},
#ifdef PT_HAVE_BUILDER
    {"split_keys", (PyCFunction)index_split_keys, METH_O,
     "split_keys(n)\n--\n\nReturns list.  Up to n-1 boundary keys splitting the last commit's live "
     "keys into n parts about equal in size (tern_split_keys: from the terms index, no scan "
     "of the keys): part i holds keys k with b[i-1] <= k < b[i].  Fewer when there are few "
     "keys."},
#endif
#ifdef PT_HAVE_INGEST
    {"ingest", (PyCFunction)(void (*)(void))pt_index_ingest, METH_VARARGS | METH_KEYWORDS,
     "ingest(paths, behind=False)\n--\n\nBrings built segment directories (Builder) into the "
     "index in one atomic, durable commit (tern_ingest), verifying each first.  Keys the "
     "index has already: the ingested document wins, or with behind=True the existing one "
     "(TERN_INGEST_BEHIND)."},
#endif
    {"options", (PyCFunction)index_options, METH_NOARGS,
     "options()\n--\n\nReturns dict.  The options the index was created with (map_size: the "
     "current one; merge_factor: this handle's), as open() takes them."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef index_getset[] = {
    {"closed", (getter)get_closed, NULL, "True once close() succeeded.", NULL},
    {"path", (getter)get_path, NULL, "The directory the index was opened on.", NULL},
    {"readonly", (getter)get_readonly, NULL, "True when opened with readonly=True.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods index_as_mapping = {NULL, (binaryfunc)pt_index_getitem, NULL};
static PySequenceMethods index_as_sequence = {.sq_contains = (objobjproc)pt_index_contains};

PyTypeObject pt_index_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.Index",
    .tp_basicsize = sizeof(pt_index),
    .tp_dealloc = (destructor)index_dealloc,
    .tp_repr = (reprfunc)index_repr,
    .tp_as_mapping = &index_as_mapping,
    .tp_as_sequence = &index_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Index(path, *, create=False, readonly=False, pread=False, foreground=False, "
              "pulsing_threshold=None, inline_value_max=None, bloom_bits_per_key=None, "
              "write_buffer_bytes=None, map_size=None, fields=None, busy_timeout_ms=None, "
              "merge_factor=None)"
              "\n--\n\n"
              "An open tern index directory (tern_open); tern.open() is the usual way to "
              "make one.  create=True makes the index when the directory is absent or "
              "empty, with the options given (kept in the index; see include/tern.h, "
              "tern_options; fields maps a field name to its pulsing threshold).  "
              "readonly=True opens for reading only; pread=True reads segments with "
              "pread(2) only (TERN_PREAD); foreground=True runs flushes and merges inside "
              "the commit that makes them due (TERN_FOREGROUND); busy_timeout_ms: how long "
              "write(), flush() and compact() wait for another writer before BusyError "
              "(0, the default: not at all); merge_factor: how many segments of similar "
              "size this handle's merges join into one (4; 0: none until compact()).\n\n"
              "`key in idx`, `idx[key]` (NotFoundError, a KeyError, when absent), get(), "
              "get_many() read the last commit; write() and snapshot() return context "
              "managers.  One Index may be shared by any number of threads: every call that "
              "can do I/O, sort or wait releases the GIL.  Open a directory once per "
              "process and share the handle.  Use `with tern.open(...) as idx:` or close().",
    .tp_weaklistoffset = offsetof(pt_index, weakrefs),
    .tp_methods = index_methods,
    .tp_getset = index_getset,
    .tp_init = (initproc)index_init,
    .tp_new = PyType_GenericNew,
};

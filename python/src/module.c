/* SPDX-License-Identifier: MIT */
/*
 * module.c — the tern._tern extension module: its types, exceptions,
 * constants and the library-level functions.  The package tern
 * (python/tern/__init__.py) re-exports all of it.
 */
#include "pytern.h"

static PyObject *mod_version(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  return PyUnicode_FromString(tern_version());
}

static PyObject *mod_strerror(PyObject *m, PyObject *arg) {
  (void)m;
  long st = PyLong_AsLong(arg);
  if (st == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(tern_strerror((int)st));
}

/* For the tests: the exception a status maps to, raised as the library's
 * calls raise it. */
static PyObject *mod_raise_status(PyObject *m, PyObject *arg) {
  (void)m;
  long st = PyLong_AsLong(arg);
  if (st == -1 && PyErr_Occurred()) return NULL;
  if (st == TERN_NOTFOUND) return pt_raise_notfound(arg);
  return pt_raise((int)st);
}

static PyMethodDef mod_methods[] = {
    {"_get_many_sharded", pt_get_many_sharded, METH_VARARGS,
     "_get_many_sharded(indexes, boundaries, keys)\n--\n\nReturns list.  The values of keys "
     "routed to indexes[i] when boundaries[i-1] <= key < boundaries[i] (None when absent), "
     "in the order given: one tern_get_batch per index, without the GIL "
     "(tern.shards.Router.get_many)."},
    {"_raise_status", mod_raise_status, METH_O,
     "_raise_status(status)\n--\n\nRaises the exception tern maps `status` to (for tests)."},
    {"version", mod_version, METH_NOARGS,
     "version()\n--\n\nReturns str.  The version of the libtern linked in (tern_version())."},
    {"strerror", mod_strerror, METH_O,
     "strerror(status)\n--\n\nReturns str.  Text for a tern status or a negated errno "
     "(tern_strerror())."},
#ifdef PT_HAVE_BUILDER
    {"verify_segment", pt_verify_segment, METH_O,
     "verify_segment(path)\n--\n\nReturns dict.  Checks a built segment directory on its own (every "
     "checksum and invariant, tern_builder_verify) and returns its {documents, first_key, "
     "last_key, bytes, name, path}; CorruptError naming the file when unsound."},
#endif
#ifdef PT_HAVE_TSV
    {"_tsv_sample", pt_tsv_sample, METH_VARARGS,
     "_tsv_sample(path, start, end, k, seed)\n--\n\nReturns bytes.  The decoded keys of about k "
     "lines starting in bytes [start, end) of a TSV file, drawn at random offsets (a pread "
     "each), as u32-length-prefixed keys (tern.dask's boundaries)."},
    {"_tsv_split", pt_tsv_split, METH_VARARGS,
     "_tsv_split(path, start, end, boundaries)\n--\n\nReturns tuple.  The lines starting in "
     "bytes [start, end) of a TSV file, parsed as `tern import` parses them, as one bytes "
     "object of binary records per key range (range i: boundaries[i-1] <= key < "
     "boundaries[i]); InvalidError 'FILE:LINE: reason' for a malformed line (tern.dask)."},
    {"_tsv_build", (PyCFunction)(void (*)(void))pt_tsv_build, METH_VARARGS | METH_KEYWORDS,
     "_tsv_build(blobs, path, dup_error, **options)\n--\n\nReturns dict.  Sorts the records of "
     "_tsv_split's blobs of one range and builds them into one segment at path "
     "(tern_builder_*); dup_error(key) is raised for a key found twice (tern.dask)."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod_def = {
    PyModuleDef_HEAD_INIT,
    "tern._tern",
    "The C extension under the tern package (import tern, not this).",
    -1,
    mod_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__tern(void);

PyMODINIT_FUNC PyInit__tern(void) {
  PyTypeObject *types[] = {&pt_index_type, &pt_snapshot_type, &pt_txn_type, &pt_scan_type,
                           &pt_terms_type};
  const char *names[] = {"Index", "Snapshot", "Txn", "ScanIterator", "TermsIterator"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *m = PyModule_Create(&mod_def);
  if (!m) return NULL;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) goto fail;
  if (pt_errors_init(m) < 0) goto fail;
#ifdef PT_HAVE_BUILDER
  if (PyType_Ready(&pt_builder_type) < 0 ||
      PyModule_AddObjectRef(m, "Builder", (PyObject *)&pt_builder_type) < 0)
    goto fail;
#endif
#ifdef PT_HAVE_BUILDER
  if (PyModule_AddObjectRef(m, "HAVE_BUILDER", Py_True) < 0) goto fail;
#else
  if (PyModule_AddObjectRef(m, "HAVE_BUILDER", Py_False) < 0) goto fail;
#endif
#ifdef PT_HAVE_TSV
  if (PyModule_AddObjectRef(m, "HAVE_TSV", Py_True) < 0) goto fail;
#else
  if (PyModule_AddObjectRef(m, "HAVE_TSV", Py_False) < 0) goto fail;
#endif
#ifdef PT_HAVE_INGEST
  if (PyModule_AddObjectRef(m, "HAVE_INGEST", Py_True) < 0) goto fail;
#else
  if (PyModule_AddObjectRef(m, "HAVE_INGEST", Py_False) < 0) goto fail;
#endif
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}

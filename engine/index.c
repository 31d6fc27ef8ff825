/*
 * index.c — opening, creating and closing an index directory.
 *
 * DIR holds catalog.mdb (an LMDB environment in one file, MDB_NOSUBDIR,
 * its lock file catalog.mdb-lock beside it), write.lock (the writers'
 * flock) and the segment files.  A directory is only ever created into
 * when it is empty; one that holds other files and no catalog is not an
 * index (TERN_ENOTINDEX) and is left untouched.
 */
#include "engine/index.h"

#include "codec/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int tern_options_init(tern_options *opts) {
  tern_clear_error();
  if (!opts) return tern_fail(TERN_EINVAL, "tern_options_init: NULL options");
  memset(opts, 0, sizeof *opts);
  opts->version = TERN_OPTIONS_VERSION;
  opts->pulsing_threshold = 1;
  opts->inline_value_max = 64;
  opts->bloom_bits_per_key = 10;
  opts->write_buffer_bytes = 8u << 20;
  opts->map_size = (uint64_t)64 << 30;
  return TERN_OK;
}

static int valid_field_name(const char *f) {
  if (!f) return 0;
  size_t n = strnlen(f, TERN_FIELD_MAX + 1);
  return n >= 1 && n <= TERN_FIELD_MAX;
}

static int options_check(const tern_options *o) {
  if (o->version != TERN_OPTIONS_VERSION)
    return tern_fail(TERN_EINVAL, "options version %d, expected %d", o->version,
                     TERN_OPTIONS_VERSION);
  if (o->pulsing_threshold > TERN_THRESHOLD_MAX)
    return tern_fail(TERN_EINVAL, "pulsing_threshold %u > %u", o->pulsing_threshold,
                     TERN_THRESHOLD_MAX);
  if (o->inline_value_max > TERN_INLINE_MAX)
    return tern_fail(TERN_EINVAL, "inline_value_max %u > %u", o->inline_value_max, TERN_INLINE_MAX);
  if (o->bloom_bits_per_key > 64)
    return tern_fail(TERN_EINVAL, "bloom_bits_per_key %u > 64", o->bloom_bits_per_key);
  if (o->write_buffer_bytes == 0) return tern_fail(TERN_EINVAL, "write_buffer_bytes is 0");
  if (o->map_size < (1u << 20)) return tern_fail(TERN_EINVAL, "map_size below 1 MiB");
  if (o->nfields && !o->fields) return tern_fail(TERN_EINVAL, "nfields without fields");
  if (o->nfields > 4096) return tern_fail(TERN_EINVAL, "%zu field options", o->nfields);
  for (size_t i = 0; i < o->nfields; i++) {
    if (!valid_field_name(o->fields[i].field))
      return tern_fail(TERN_EINVAL, "field option %zu: bad field name", i);
    if (o->fields[i].threshold > TERN_THRESHOLD_MAX)
      return tern_fail(TERN_EINVAL, "field %s: threshold %u > %u", o->fields[i].field,
                       o->fields[i].threshold, TERN_THRESHOLD_MAX);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(o->fields[i].field, o->fields[j].field))
        return tern_fail(TERN_EINVAL, "field %s given twice", o->fields[i].field);
  }
  return TERN_OK;
}

/* Copies decoded options into the index (owned field names). */
static int options_adopt(tern_index *idx, const tern_rec_options *r) {
  tern_options *o = &idx->opts;
  tern_options_init(o);
  o->pulsing_threshold = r->pulsing_threshold;
  o->inline_value_max = r->inline_value_max;
  o->bloom_bits_per_key = r->bloom_bits_per_key;
  o->write_buffer_bytes = r->write_buffer_bytes;
  o->map_size = r->map_size;
  if (r->nfields) {
    tern_field_option *f = calloc(r->nfields, sizeof *f);
    if (!f) return tern_fail(TERN_ENOMEM, "options: out of memory");
    o->fields = f;
    for (size_t i = 0; i < r->nfields; i++) {
      char *name = malloc(r->fields[i].name_len + 1);
      if (!name) return tern_fail(TERN_ENOMEM, "options: out of memory");
      memcpy(name, r->fields[i].name, r->fields[i].name_len);
      name[r->fields[i].name_len] = 0;
      f[i].field = name;
      f[i].threshold = r->fields[i].threshold;
      o->nfields = i + 1;
    }
  }
  if (o->pulsing_threshold > TERN_THRESHOLD_MAX || o->inline_value_max > TERN_INLINE_MAX ||
      o->write_buffer_bytes == 0)
    return tern_fail(TERN_ECORRUPT, "%s/%s: options record out of range", idx->dir,
                     TERN_CATALOG_FILE);
  return TERN_OK;
}

static void options_release(tern_options *o) {
  for (size_t i = 0; i < o->nfields; i++)
    free((char *)o->fields[i].field);
  free((void *)o->fields);
  o->fields = NULL;
  o->nfields = 0;
}

static char *path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* 1 when the directory has no entries but the lock files a creation
 * that crashed before creating the catalog may leave, 0 when it has
 * others, -errno on failure. */
static int dir_is_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return tern_fail_errno(dir);
  struct dirent *e;
  int empty = 1;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        strcmp(e->d_name, TERN_CATALOG_FILE "-lock") && strcmp(e->d_name, TERN_LOCK_FILE)) {
      empty = 0;
      break;
    }
  closedir(d);
  return empty;
}

/* Decides whether to create: checks the directory without writing to it. */
static int prepare_dir(const char *dir, unsigned flags, int *create) {
  struct stat st;
  *create = 0;
  if (stat(dir, &st) < 0) {
    if (errno != ENOENT) return tern_fail_errno(dir);
    if (!(flags & TERN_CREATE)) return tern_fail(TERN_ENOTINDEX, "%s: no such index", dir);
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) return tern_fail_errno(dir);
    *create = 1;
    return TERN_OK;
  }
  if (!S_ISDIR(st.st_mode)) return tern_fail(TERN_ENOTINDEX, "%s: not a directory", dir);
  char *cat = path_join(dir, TERN_CATALOG_FILE);
  if (!cat) return tern_fail(TERN_ENOMEM, "out of memory");
  int has_catalog = stat(cat, &st) == 0;
  free(cat);
  if (has_catalog) return TERN_OK;
  int empty = dir_is_empty(dir);
  if (empty < 0) return empty;
  if (!empty)
    return tern_fail(TERN_ENOTINDEX, "%s: not a tern index (no %s)", dir, TERN_CATALOG_FILE);
  if (!(flags & TERN_CREATE))
    return tern_fail(TERN_ENOTINDEX, "%s: no index (empty directory)", dir);
  *create = 1;
  return TERN_OK;
}

static int open_env(tern_index *idx, uint64_t map_size) {
  char *cat = path_join(idx->dir, TERN_CATALOG_FILE);
  if (!cat) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = mdb_env_create(&idx->env);
  if (rc == 0) rc = mdb_env_set_maxdbs(idx->env, 8);
  if (rc == 0 && map_size) rc = mdb_env_set_mapsize(idx->env, (size_t)map_size);
  if (rc == 0) {
    unsigned f = MDB_NOSUBDIR | MDB_NOTLS | ((idx->flags & TERN_RDONLY) ? MDB_RDONLY : 0);
    rc = mdb_env_open(idx->env, cat, f, 0666);
    if (rc == MDB_INVALID)
      rc = tern_fail(TERN_ENOTINDEX, "%s: not an LMDB catalog", cat);
    else if (rc == MDB_VERSION_MISMATCH)
      rc = tern_fail(TERN_EVERSION, "%s: LMDB version mismatch", cat);
    else if (rc == ENOENT)
      rc = tern_fail(TERN_ENOTINDEX, "%s: no catalog", cat);
    else
      rc = tern_mdb_status(rc, cat);
  } else {
    rc = tern_mdb_status(rc, "creating the environment");
  }
  free(cat);
  return rc;
}

static int open_dbi(MDB_txn *t, const char *name, unsigned flags, MDB_dbi *out) {
  int rc = mdb_dbi_open(t, name, flags, out);
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  return tern_mdb_status(rc, name);
}

int tern_index_reopen_env(tern_index *idx) {
  TERN_TRY(open_env(idx, idx->opts.map_size));
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = open_dbi(t, "meta", 0, &idx->dbi_meta);
  if (rc == TERN_OK) rc = open_dbi(t, "segments", 0, &idx->dbi_segs);
  if (rc == TERN_OK) rc = open_dbi(t, "livedocs", 0, &idx->dbi_live);
  if (rc == TERN_OK) rc = open_dbi(t, "buffer", 0, &idx->dbi_buf);
  if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "%s: catalog misses a table", idx->dir);
  if (rc == TERN_OK) return tern_mdb_status(mdb_txn_commit(t), "reopening the catalog");
  mdb_txn_abort(t);
  return rc;
}

/* Holds the directory shared for as long as the index is open, taken before
 * LMDB opens the catalog: tern_compact replaces catalog.mdb only while it
 * holds the directory alone (no other handle, in any process). */
static int share_dir(tern_index *idx) {
  idx->dir_fd = open(idx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (idx->dir_fd < 0) return tern_fail_errno(idx->dir);
  int rc;
  while ((rc = flock(idx->dir_fd, LOCK_SH)) < 0 && errno == EINTR) {
  }
  return rc == 0 ? TERN_OK : tern_fail_errno(idx->dir);
}

static int write_initial(tern_index *idx, MDB_txn *t, const tern_options *o) {
  uint8_t fmt[TERN_REC_FORMAT_SIZE], *ob;
  size_t olen;
  tern_rec_format_encode(fmt);
  TERN_TRY(tern_rec_options_encode(o, &ob, &olen));
  MDB_val k = {6, (void *)"format"}, v = {sizeof fmt, fmt};
  int rc = tern_mdb_status(mdb_put(t, idx->dbi_meta, &k, &v, 0), "writing the format");
  MDB_val ko = {7, (void *)"options"}, vo = {olen, ob};
  if (rc == TERN_OK)
    rc = tern_mdb_status(mdb_put(t, idx->dbi_meta, &ko, &vo, 0), "writing options");
  free(ob);
  tern_rec_state s = {0, 1, 0, 0};
  if (rc == TERN_OK) rc = tern_catalog_put_state(idx, t, &s);
  return rc;
}

/* Opens the DBIs and reads (or, creating, writes) format and options. */
static int load_catalog(tern_index *idx, int create, const tern_options *copts) {
  int rdonly = (idx->flags & TERN_RDONLY) != 0;
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, rdonly ? MDB_RDONLY : 0, &t), "begin"));
  unsigned cf = rdonly ? 0 : MDB_CREATE;
  int rc = open_dbi(t, "meta", cf, &idx->dbi_meta);
  if (rc == TERN_NOTFOUND)
    rc = tern_fail(TERN_ENOTINDEX, "%s: catalog has no tern records", idx->dir);
  if (rc == TERN_OK) rc = open_dbi(t, "segments", cf, &idx->dbi_segs);
  if (rc == TERN_OK) rc = open_dbi(t, "livedocs", cf, &idx->dbi_live);
  if (rc == TERN_OK) rc = open_dbi(t, "buffer", cf, &idx->dbi_buf);
  if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "%s: catalog misses a table", idx->dir);
  MDB_val k = {6, (void *)"format"}, v;
  int got = rc == TERN_OK ? mdb_get(t, idx->dbi_meta, &k, &v) : 0;
  if (rc == TERN_OK && got == MDB_NOTFOUND) {
    /* An environment without records: a creation that crashed before its
     * first commit, or someone else's LMDB file. */
    MDB_stat ms;
    mdb_stat(t, idx->dbi_meta, &ms);
    if (!(idx->flags & TERN_CREATE) || rdonly || ms.ms_entries != 0)
      rc = tern_fail(TERN_ENOTINDEX, "%s: catalog without a tern format record", idx->dir);
    else
      create = 1;
  } else if (rc == TERN_OK) {
    rc = tern_mdb_status(got, "reading the format");
    uint32_t version;
    if (rc == TERN_OK) rc = tern_rec_format_decode(v.mv_data, v.mv_size, &version);
    if (rc == TERN_ECORRUPT) rc = tern_fail(TERN_ENOTINDEX, "%s: %s", idx->dir, tern_errmsg());
    create = 0;
  }
  if (rc == TERN_OK && create) rc = write_initial(idx, t, copts);
  MDB_val ko = {7, (void *)"options"}, vo;
  if (rc == TERN_OK) {
    rc = tern_mdb_status(mdb_get(t, idx->dbi_meta, &ko, &vo), "reading options");
    if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "%s: catalog has no options", idx->dir);
  }
  tern_rec_options ro;
  if (rc == TERN_OK && (rc = tern_rec_options_decode(&ro, vo.mv_data, vo.mv_size)) == TERN_OK) {
    rc = options_adopt(idx, &ro);
    tern_rec_options_free(&ro);
  }
  if (rc == TERN_OK) {
    tern_rec_state s;
    rc = tern_catalog_get_state(idx, t, &s);
  }
  if (rc != TERN_OK) {
    mdb_txn_abort(t);
    return rc;
  }
  return tern_mdb_status(mdb_txn_commit(t), "committing the catalog");
}

/* Raises the map to `want` bytes and records it as the index's map_size:
 * the one option that may change after creation, so that TERN_EFULL has a
 * remedy.  The map grows first, with no transaction active: a full map
 * leaves no room for the options record. */
static int grow_map_size(tern_index *idx, uint64_t want) {
  TERN_TRY(tern_mdb_status(mdb_env_set_mapsize(idx->env, (size_t)want), "map size"));
  tern_options o = idx->opts;
  o.map_size = want;
  uint8_t *ob;
  size_t olen;
  TERN_TRY(tern_rec_options_encode(&o, &ob, &olen));
  MDB_txn *t = NULL;
  int rc = tern_mdb_status(mdb_txn_begin(idx->env, NULL, 0, &t), "begin");
  MDB_val ko = {7, (void *)"options"}, vo = {olen, ob};
  if (rc == TERN_OK) rc = tern_mdb_status(mdb_put(t, idx->dbi_meta, &ko, &vo, 0), "writing options");
  if (rc == TERN_OK)
    rc = tern_mdb_status(mdb_txn_commit(t), "committing options");
  else if (t)
    mdb_txn_abort(t);
  free(ob);
  if (rc == TERN_OK) idx->opts.map_size = want;
  return rc;
}

typedef struct known_set {
  uint64_t *v;
  size_t n, cap;
} known_set;

static int collect_known(void *ctx, uint64_t number, const tern_rec_segment *r) {
  (void)r;
  known_set *k = ctx;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 16;
    uint64_t *v = realloc(k->v, cap * sizeof *v);
    if (!v) return tern_fail(TERN_ENOMEM, "out of memory");
    k->v = v;
    k->cap = cap;
  }
  k->v[k->n++] = number;
  return TERN_OK;
}

/* Removes segment files that the catalog does not reference. */
static int remove_unreferenced(tern_index *idx) {
  known_set k = {0};
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = tern_catalog_each_segment(idx, t, collect_known, &k);
  mdb_txn_abort(t);
  DIR *d = rc == TERN_OK ? opendir(idx->dir) : NULL;
  if (rc == TERN_OK && !d) rc = tern_fail_errno(idx->dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char name[256];
    if (!tern_seg_file_segment(e->d_name, name, sizeof name)) continue;
    int known = 0;
    for (size_t i = 0; i < k.n && !known; i++) {
      char kn[TERN_SEGNAME_MAX];
      tern_segment_name(kn, k.v[i]);
      known = !strcmp(kn, name);
    }
    if (!known) tern_seg_remove(idx->dir, name);
  }
  if (d) closedir(d);
  free(k.v);
  return rc;
}

static int cleanup_leftovers(tern_index *idx) {
  if (flock(idx->lock_fd, LOCK_EX | LOCK_NB) < 0) return TERN_OK; /* a writer is at work */
  int rc = remove_unreferenced(idx);
  flock(idx->lock_fd, LOCK_UN);
  return rc;
}

static void index_free(tern_index *idx) {
  if (!idx) return;
  tern_states_close(idx);
  if (idx->env) mdb_env_close(idx->env);
  if (idx->lock_fd >= 0) close(idx->lock_fd);
  if (idx->dir_fd >= 0) close(idx->dir_fd);
  pthread_rwlock_destroy(&idx->env_rw);
  options_release(&idx->opts);
  pthread_mutex_destroy(&idx->mu);
  free(idx->dir);
  free(idx);
}

int tern_open(tern_index **out, const char *dir, unsigned flags, const tern_options *opts) {
  tern_clear_error();
  if (!out || !dir || !*dir || (flags & ~(TERN_CREATE | TERN_RDONLY | TERN_PREAD)))
    return tern_fail(TERN_EINVAL, "tern_open: bad arguments");
  *out = NULL;
  if ((flags & TERN_CREATE) && (flags & TERN_RDONLY))
    return tern_fail(TERN_EINVAL, "tern_open: TERN_CREATE with TERN_RDONLY");
  tern_options defaults;
  tern_options_init(&defaults);
  int given = opts != NULL; /* a map_size the caller gave grows an existing index's map */
  if (!opts) opts = &defaults;
  if (flags & TERN_CREATE) TERN_TRY(options_check(opts));
  int create;
  TERN_TRY(prepare_dir(dir, flags, &create));
  tern_index *idx = calloc(1, sizeof *idx);
  if (!idx) return tern_fail(TERN_ENOMEM, "out of memory");
  idx->lock_fd = idx->dir_fd = -1;
  idx->flags = flags;
  pthread_mutex_init(&idx->mu, NULL);
  pthread_rwlock_init(&idx->env_rw, NULL);
  idx->dir = strdup(dir);
  int rc = idx->dir ? TERN_OK : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc == TERN_OK) rc = share_dir(idx);
  if (rc == TERN_OK) rc = open_env(idx, (flags & TERN_CREATE) ? opts->map_size : 0);
  if (rc == TERN_OK) {
    int dead; /* reader slots of processes that died (kill -9) */
    mdb_reader_check(idx->env, &dead);
    rc = load_catalog(idx, create, opts);
  }
  if (rc == TERN_OK && given && !(flags & TERN_RDONLY) && opts->map_size > idx->opts.map_size) {
    if (opts->map_size < (1u << 20)) rc = tern_fail(TERN_EINVAL, "map_size below 1 MiB");
    if (rc == TERN_OK) rc = grow_map_size(idx, opts->map_size);
  }
  if (rc == TERN_OK && idx->opts.map_size > 0) {
    MDB_envinfo info;
    mdb_env_info(idx->env, &info);
    if (info.me_mapsize < idx->opts.map_size)
      rc = tern_mdb_status(mdb_env_set_mapsize(idx->env, (size_t)idx->opts.map_size), "map size");
  }
  if (rc == TERN_OK && !(flags & TERN_RDONLY)) {
    char *lp = path_join(dir, TERN_LOCK_FILE);
    idx->lock_fd = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : -1;
    if (idx->lock_fd < 0) rc = lp ? tern_fail_errno(lp) : tern_fail(TERN_ENOMEM, "out of memory");
    free(lp);
    if (rc == TERN_OK) rc = cleanup_leftovers(idx);
  }
  if (rc != TERN_OK) {
    index_free(idx);
    return rc;
  }
  *out = idx;
  return TERN_OK;
}

int tern_close(tern_index *idx) {
  tern_clear_error();
  if (!idx) return TERN_OK;
  pthread_mutex_lock(&idx->mu);
  int busy = idx->snapshots > 0 || idx->writing;
  pthread_mutex_unlock(&idx->mu);
  if (busy)
    return tern_fail(TERN_EBUSY, "%s: snapshots or a write transaction still open", idx->dir);
  index_free(idx);
  return TERN_OK;
}

int tern_get_options(const tern_index *idx, tern_options *out) {
  tern_clear_error();
  if (!idx || !out) return tern_fail(TERN_EINVAL, "tern_get_options: NULL argument");
  *out = idx->opts;
  return TERN_OK;
}

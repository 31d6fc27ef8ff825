/* SPDX-License-Identifier: MIT */
/*
 * cmd_build.c — `tern build`: TSV lines (as `tern import` reads them) into
 * a segment built outside any index (tern_builder_*), sorted in bounded
 * memory.
 *
 * The input may come in any order: documents go to an external sort
 * (extsort.h) that holds at most the memory budget's worth (--memory,
 * less a reserve for everything else) and spills sorted runs to unlinked
 * temporary files, then merges them into the builder.  Unlike import, a
 * key given twice is an error (a segment holds a key once, and which line
 * should win is not the builder's to guess): both lines are named.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"
#include "extsort.h"
#include "progress.h"
#include "tsv.h"

enum { READ_BUFFER = 4 << 20, PROGRESS_EVERY = 1 << 14 };
/* Memory the budget leaves to all but the sort: the program, the input
 * buffer, the builder's page buffers, its 8 bytes per key for the filter
 * while merging (the sort's buffers are freed by then). */
#define RESERVE ((size_t)64 << 20)
#define DEFAULT_MEMORY ((size_t)512 << 20)

typedef struct build_run {
  const char *out;
  const char *file; /* NULL for standard input */
  const char *tmpdir;
  int fd, quiet;
  size_t memory;
  cli_create_opts co;
  tsv_reader rd;
  tsv_doc doc;
  progress prog;
  extsort *sort;
  tern_builder *b;
  uint64_t docs;
  uint8_t prev[TERN_KEY_MAX]; /* the last key added, for duplicates */
  size_t prev_len;
  uint64_t prev_line;
} build_run;

static int read_lines(build_run *r) {
  char *line;
  size_t len;
  int rc;
  tsv_error err;
  while ((rc = tsv_read_line(&r->rd, &line, &len)) > 0) {
    if (len == 0) continue;
    rc = tsv_parse_doc(line, len, &r->doc, &err);
    if (rc == -ENOMEM) return cli_error("%s", strerror(ENOMEM));
    if (rc) return cli_line_error(r->file, r->rd.line, err.reason);
    rc = extsort_add(r->sort, r->doc.key, r->doc.klen, r->doc.val, r->doc.vlen, r->doc.terms,
                     r->doc.nterms, r->rd.line);
    if (rc) return cli_error("%s: sorting: %s", r->tmpdir, strerror(-rc));
    if (++r->docs % PROGRESS_EVERY == 0) progress_update(&r->prog, r->docs, r->rd.bytes_in);
  }
  if (rc == 0) return CLI_OK;
  if (rc == -E2BIG) return cli_line_error(r->file, r->rd.line + 1, "line longer than 1 GiB");
  return cli_error("%s: %s", r->file ? r->file : "standard input", strerror(-rc));
}

static int duplicate(const build_run *r, const ext_doc *d) {
  char esc[ESC_ENCODED_MAX(TERN_KEY_MAX) + 1];
  esc[esc_encode(d->key, d->klen, esc)] = '\0';
  char q[CLI_QUOTE_MAX], why[CLI_QUOTE_MAX + 64];
  snprintf(why, sizeof why, "duplicate key '%s' (also on line %llu)",
           cli_quote(esc, strlen(esc), q), (unsigned long long)r->prev_line);
  return cli_line_error(r->file, d->line, why);
}

/* The sorted documents into the builder. */
static int add_sorted(build_run *r) {
  ext_doc d;
  int rc;
  uint64_t done = 0;
  while ((rc = extsort_next(r->sort, &d)) > 0) {
    if (done && d.klen == r->prev_len && !memcmp(d.key, r->prev, d.klen)) return duplicate(r, &d);
    int st = tern_builder_add(r->b, d.key, d.klen, d.val, d.vlen, d.terms, d.nterms);
    if (st) return cli_fail(r->out, st);
    memcpy(r->prev, d.key, d.klen);
    r->prev_len = d.klen;
    r->prev_line = d.line;
    if (++done % PROGRESS_EVERY == 0) progress_commit(&r->prog, "write", done, r->docs);
  }
  if (rc < 0) return cli_error("%s: reading a sorted run back: %s", r->tmpdir, strerror(-rc));
  return CLI_OK;
}

static int build(build_run *r) {
  int st = tern_builder_open(&r->b, r->out, &r->co.opts);
  if (st) return cli_fail(r->out, st);
  int rc = extsort_new(&r->sort,
                       r->memory > RESERVE + (16u << 20) ? r->memory - RESERVE : (size_t)16 << 20,
                       r->tmpdir)
               ? cli_error("%s", strerror(ENOMEM))
               : CLI_OK;
  if (rc == CLI_OK) rc = read_lines(r);
  if (rc == CLI_OK) {
    progress_commit(&r->prog, "sort", 0, 1);
    int e = extsort_finish(r->sort);
    if (e) rc = cli_error("%s: sorting: %s", r->tmpdir, strerror(-e));
  }
  tsv_reader_free(&r->rd); /* its buffer is not needed while merging */
  if (rc == CLI_OK) rc = add_sorted(r);
  extsort_free(r->sort);
  r->sort = NULL;
  if (rc != CLI_OK) {
    tern_builder_abort(r->b);
    return rc;
  }
  progress_commit(&r->prog, "sync", 0, 1);
  tern_build_info info;
  st = tern_builder_finish(r->b, &info);
  progress_end(&r->prog);
  if (st) return cli_fail(r->out, st);
  if (!r->quiet) {
    double secs = progress_elapsed(&r->prog);
    fprintf(stderr, "%s: %llu %s built in %.2f s (%.0f docs/s), %llu bytes\n", r->out,
            (unsigned long long)info.documents, cli_plural(info.documents, "document", "documents"),
            secs, secs > 0 ? (double)info.documents / secs : 0.0, (unsigned long long)info.bytes);
  }
  return CLI_OK;
}

/* "512M", "1G", "300000000": bytes. */
static int parse_size(const char *arg, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (errno || end == arg || arg[0] == '-') return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift) end++;
  if (*end || v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

/* The directory OUT is in (the default for temporary files). */
static char *parent_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

int cmd_build(int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_CREATE_LONGOPTS,
      {"memory", required_argument, NULL, 'm'},
      {"tmpdir", required_argument, NULL, 't'},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  build_run r;
  memset(&r, 0, sizeof r);
  cli_create_opts_init(&r.co);
  r.memory = DEFAULT_MEMORY;
  int c;
  while ((c = cli_getopt(argc, argv, ":qh", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("build");
    case 'q': r.quiet = 1; break;
    case 'm':
      if (parse_size(optarg, &r.memory) || r.memory < ((size_t)32 << 20))
        return cli_usage_error("build", "--memory '%s': a size of 32M or more wanted", optarg);
      break;
    case 't': r.tmpdir = optarg; break;
    case '?': return CLI_FAIL;
    default:
      if (cli_create_option(&r.co, "build", c, optarg)) return CLI_FAIL;
    }
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("build", "missing OUT");
  if (nargs > 2) return cli_usage_error("build", "too many arguments");
  r.out = argv[optind];
  r.file = nargs == 2 && strcmp(argv[optind + 1], "-") ? argv[optind + 1] : NULL;
  char *parent = r.tmpdir ? NULL : parent_of(r.out);
  if (!r.tmpdir && !parent) return cli_error("%s", strerror(ENOMEM));
  if (!r.tmpdir) r.tmpdir = parent;
  if (r.file) {
    r.fd = open(r.file, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (r.fd < 0 || (fstat(r.fd, &sb) == 0 && S_ISDIR(sb.st_mode))) {
      int e = r.fd < 0 ? errno : EISDIR;
      if (r.fd >= 0) close(r.fd);
      free(parent);
      return cli_error("%s: %s", r.file, strerror(e));
    }
  }
  struct stat sb;
  uint64_t size = fstat(r.fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
  if (size) posix_fadvise(r.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  int rc;
  if (tsv_reader_init(&r.rd, r.fd, READ_BUFFER)) {
    rc = cli_error("%s", strerror(ENOMEM));
  } else {
    tsv_doc_init(&r.doc);
    progress_start(&r.prog, !r.quiet, size);
    rc = build(&r);
    tsv_doc_free(&r.doc);
  }
  tsv_reader_free(&r.rd);
  if (r.file) close(r.fd);
  free(parent);
  return rc;
}

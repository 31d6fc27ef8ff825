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
 *
 * With --from/--to only one key range is kept (build_ranges.h), and with
 * --split-at the sorted stream is cut into one segment per part, built one
 * after another under OUT.tmp and published together by renaming it to
 * OUT: a process reads its input once however many parts it builds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_ranges.h"
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
  build_ranges rg;
  char *stage;     /* OUT.tmp, holding the parts while they are built (--split-at) */
  size_t part;     /* the part being built */
  int part_width;  /* digits of a part's name */
  uint64_t built;  /* documents and bytes of the parts finished */
  uint64_t bytes;
  int split; /* --split-at given (even with no cut: OUT/0 then) */
} build_run;

static int read_lines(build_run *r) {
  char *line;
  size_t len;
  int rc;
  tsv_error err;
  while ((rc = tsv_read_line(&r->rd, &line, &len)) > 0) {
    if (r->rd.line % PROGRESS_EVERY == 0) progress_update(&r->prog, r->docs, r->rd.bytes_in);
    if (len == 0) continue;
    if (r->rg.bounded) { /* outside --from/--to: dropped before any copy or parse */
      const char *tab = memchr(line, '\t', len);
      if (tab && ranges_drops_column(&r->rg, line, (size_t)(tab - line))) continue;
    }
    rc = tsv_parse_doc(line, len, &r->doc, &err);
    if (rc == -ENOMEM) return cli_error("%s", strerror(ENOMEM));
    if (rc) return cli_line_error(r->file, r->rd.line, err.reason);
    rc = extsort_add(r->sort, r->doc.key, r->doc.klen, r->doc.val, r->doc.vlen, r->doc.terms,
                     r->doc.nterms, r->rd.line);
    if (rc) return cli_error("%s: sorting: %s", r->tmpdir, strerror(-rc));
    r->docs++;
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

/* The directory OUT is in (the default for temporary files). */
static char *parent_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

/* ------------------------------------------------------------ parts (--split-at) */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* OUT.tmp and all it holds: what a failed build of parts leaves. */
static void remove_stage(build_run *r) {
  if (r->stage) nftw(r->stage, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Whether path is absent or an empty directory (rename(2) replaces one). */
static int absent_or_empty(const char *path) {
  DIR *d = opendir(path);
  if (!d) return errno == ENOENT;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)))
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  return empty;
}

/* OUT must be absent or an empty directory (OUT.tmp is renamed over it),
 * and OUT.tmp absent (never removed unasked: it might be a build still
 * running); then OUT.tmp is made. */
static int make_stage(build_run *r) {
  if (!absent_or_empty(r->out)) return cli_error("%s: exists and is not empty", r->out);
  size_t len = strlen(r->out) + 5;
  if (!(r->stage = malloc(len))) return cli_error("%s", strerror(ENOMEM));
  snprintf(r->stage, len, "%s.tmp", r->out);
  if (mkdir(r->stage, 0755) != 0) {
    int e = errno;
    free(r->stage);
    r->stage = NULL;
    if (e == EEXIST)
      return cli_error("%s.tmp: exists (left by an interrupted build, or a build running): "
                       "remove it first",
                       r->out);
    return cli_error("%s.tmp: %s", r->out, strerror(e));
  }
  size_t n = r->rg.ncuts;
  for (r->part_width = 1; n >= 10; n /= 10)
    r->part_width++;
  return CLI_OK;
}

/* Opens the builder of part r->part (OUT itself when there are no parts). */
static int open_part(build_run *r) {
  char path[4096];
  const char *at = r->out;
  if (r->stage) {
    snprintf(path, sizeof path, "%s/%0*zu", r->stage, r->part_width, r->part);
    at = path;
  }
  int st = tern_builder_open(&r->b, at, &r->co.opts);
  if (st) {
    r->b = NULL;
    return cli_fail(at, st);
  }
  return CLI_OK;
}

static int finish_part(build_run *r) {
  tern_build_info info;
  int st = tern_builder_finish(r->b, &info);
  r->b = NULL;
  if (st) return cli_fail(r->stage ? r->stage : r->out, st);
  r->built += info.documents;
  r->bytes += info.bytes;
  return CLI_OK;
}

/* Moves on to the part the next key belongs in, finishing the ones before
 * (those the input gave no key are left empty directories). */
static int switch_part(build_run *r, size_t to) {
  while (r->part < to) {
    int rc = finish_part(r);
    r->part++;
    if (rc == CLI_OK) rc = open_part(r);
    if (rc) return rc;
  }
  return CLI_OK;
}

/* Every part built: OUT.tmp (and the parts' names in it) made durable and
 * renamed to OUT. */
static int publish_stage(build_run *r) {
  int fd = open(r->stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return cli_error("%s: %s", r->stage, strerror(e));
  }
  close(fd);
  if (rename(r->stage, r->out) != 0) return cli_error("%s: %s", r->out, strerror(errno));
  char *parent = parent_of(r->out);
  fd = parent ? open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  int rc = fd >= 0 && fsync(fd) == 0 ? CLI_OK : cli_error("%s: %s", parent ? parent : r->out,
                                                          parent ? strerror(errno) : "no memory");
  if (fd >= 0) close(fd);
  free(parent);
  return rc;
}

/* ------------------------------------------------------------ building */

/* The sorted documents into the builder(s). */
static int add_sorted(build_run *r) {
  ext_doc d;
  int rc;
  uint64_t done = 0;
  while ((rc = extsort_next(r->sort, &d)) > 0) {
    if (done && d.klen == r->prev_len && !memcmp(d.key, r->prev, d.klen)) return duplicate(r, &d);
    if (r->stage) {
      int e = switch_part(r, ranges_part_of(&r->rg, r->part, d.key, d.klen));
      if (e) return e;
    }
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

static int sort_input(build_run *r) {
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
  return rc;
}

static void report(build_run *r) {
  if (r->quiet) return;
  double secs = progress_elapsed(&r->prog);
  fprintf(stderr, "%s: %llu %s built in %.2f s (%.0f docs/s), %llu bytes", r->out,
          (unsigned long long)r->built, cli_plural(r->built, "document", "documents"), secs,
          secs > 0 ? (double)r->built / secs : 0.0, (unsigned long long)r->bytes);
  if (r->split)
    fprintf(stderr, ", %zu %s", r->rg.ncuts + 1, cli_plural(r->rg.ncuts + 1, "segment", "segments"));
  fputc('\n', stderr);
}

static int build(build_run *r) {
  int rc = r->split ? make_stage(r) : CLI_OK;
  if (rc == CLI_OK) rc = open_part(r);
  if (rc == CLI_OK) rc = sort_input(r);
  if (rc == CLI_OK) rc = add_sorted(r);
  extsort_free(r->sort);
  r->sort = NULL;
  if (rc == CLI_OK) {
    progress_commit(&r->prog, "sync", 0, 1);
    rc = switch_part(r, r->rg.ncuts); /* the parts the input left empty */
    if (rc == CLI_OK) rc = finish_part(r);
    if (rc == CLI_OK && r->stage) rc = publish_stage(r);
  }
  progress_end(&r->prog);
  tern_builder_abort(r->b); /* NULL unless failed */
  r->b = NULL;
  if (rc != CLI_OK) remove_stage(r);
  free(r->stage);
  r->stage = NULL;
  if (rc == CLI_OK) report(r);
  return rc;
}
/* "512M", "1G", "300000000": bytes (cli_parse_size, as import's --memory). */
static int parse_size(const char *arg, size_t *out) {
  uint64_t v;
  if (cli_parse_size(arg, &v) || v > SIZE_MAX) return -1;
  *out = (size_t)v;
  return 0;
}

/* The options into r; the operands' index, or -1 after reporting. */
static int parse_options(build_run *r, int argc, char **argv, const char **split_at) {
  static const struct option longopts[] = {
      CLI_CREATE_LONGOPTS,
      {"memory", required_argument, NULL, 'm'},
      {"tmpdir", required_argument, NULL, 't'},
      {"from", required_argument, NULL, 'f'},
      {"to", required_argument, NULL, 'o'},
      {"split-at", required_argument, NULL, 's'},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":qh", longopts)) != -1) {
    switch (c) {
    case 'h': cli_help("build"); return -2;
    case 'q': r->quiet = 1; break;
    case 'm':
      if (parse_size(optarg, &r->memory) || r->memory < ((size_t)32 << 20)) {
        cli_usage_error("build", "--memory '%s': a size of 32M or more wanted", optarg);
        return -1;
      }
      break;
    case 't': r->tmpdir = optarg; break;
    case 'f':
      if (ranges_set_from(&r->rg, optarg)) return -1;
      break;
    case 'o':
      if (ranges_set_to(&r->rg, optarg)) return -1;
      break;
    case 's': *split_at = optarg; break;
    case '?': return -1;
    default:
      if (cli_create_option(&r->co, "build", c, optarg)) return -1;
    }
  }
  return optind;
}

static int build_input(build_run *r) {
  struct stat sb;
  uint64_t size = fstat(r->fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
  if (size) posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  int rc;
  if (tsv_reader_init(&r->rd, r->fd, READ_BUFFER)) {
    rc = cli_error("%s", strerror(ENOMEM));
  } else {
    tsv_doc_init(&r->doc);
    progress_start(&r->prog, !r->quiet, size);
    rc = build(r);
    tsv_doc_free(&r->doc);
  }
  tsv_reader_free(&r->rd);
  return rc;
}

int cmd_build(int argc, char **argv) {
  build_run r;
  memset(&r, 0, sizeof r);
  cli_create_opts_init(&r.co);
  r.memory = DEFAULT_MEMORY;
  const char *split_at = NULL;
  int first = parse_options(&r, argc, argv, &split_at);
  if (first < 0) return first == -2 ? CLI_OK : CLI_FAIL;
  int nargs = argc - first;
  if (nargs < 1) return cli_usage_error("build", "missing OUT");
  if (nargs > 2) return cli_usage_error("build", "too many arguments");
  r.out = argv[first];
  r.file = nargs == 2 && strcmp(argv[first + 1], "-") ? argv[first + 1] : NULL;
  r.split = split_at != NULL;
  if (ranges_load(&r.rg, split_at)) {
    ranges_free(&r.rg);
    return CLI_FAIL;
  }
  char *parent = r.tmpdir ? NULL : parent_of(r.out);
  if (!r.tmpdir && !parent) return cli_error("%s", strerror(ENOMEM));
  if (!r.tmpdir) r.tmpdir = parent;
  int rc = CLI_OK;
  if (r.file) {
    r.fd = open(r.file, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (r.fd < 0 || (fstat(r.fd, &sb) == 0 && S_ISDIR(sb.st_mode))) {
      int e = r.fd < 0 ? errno : EISDIR;
      if (r.fd >= 0) close(r.fd);
      r.fd = -1;
      rc = cli_error("%s: %s", r.file, strerror(e));
    }
  }
  if (rc == CLI_OK) rc = build_input(&r);
  if (r.file && r.fd >= 0) close(r.fd);
  ranges_free(&r.rg);
  free(parent);
  return rc;
}

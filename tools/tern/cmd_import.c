/* SPDX-License-Identifier: MIT */
/*
 * cmd_import.c — `tern import`: TSV lines into the index, as one bulk
 * transaction.
 *
 * All or nothing: the first malformed line (or failed put) aborts the
 * transaction, so the index is left as it was.  The loop is the hot path of
 * the tool (millions of lines a second): lines come from tsv_reader's big
 * buffer and are decoded in place, so no line costs an allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "tsv.h"

typedef struct import_run {
  const char *dir;
  const char *file; /* NULL for standard input */
  int fd;
  int dry_run, quiet;
  uint64_t memory; /* --memory; 0: the default (memory_bound) */
  cli_create_opts co;
  tsv_reader rd;
  tsv_doc doc;
  progress prog;
  uint64_t docs;
  double commit_secs; /* of tern_commit, reported apart: it is the engine's share */
  tern_txn *txn;      /* NULL in a dry run */
} import_run;

enum { READ_BUFFER = 4 << 20, PROGRESS_EVERY = 1 << 14 };

/* The transaction's memory bound: --memory, else the input's size (a
 * regular file's; 1 GiB for a pipe), within MEMORY_MIN and MEMORY_PIPE: with the
 * process's fixed buffers, the import's peak stays within twice a file's
 * size and never grows past the bound with the input. */
#define MEMORY_MIN ((uint64_t)32 << 20)
#define MEMORY_PIPE ((uint64_t)1 << 30)
static uint64_t memory_bound(const import_run *r, uint64_t size) {
  if (r->memory) return r->memory;
  uint64_t m = size ? size : MEMORY_PIPE;
  if (m > MEMORY_PIPE) m = MEMORY_PIPE;
  return m < MEMORY_MIN ? MEMORY_MIN : m;
}

/* Reports a failed put: an argument the engine refused is the line's fault
 * (say which line); anything else is the index's. */
static int put_failed(import_run *r, int st) {
  if (st != TERN_EINVAL) return cli_fail(r->dir, st);
  const char *msg = tern_errmsg();
  return cli_line_error(r->file, r->rd.line, *msg ? msg : tern_strerror(st));
}

/* Reads, checks and (unless a dry run) puts every line.  Returns CLI_OK or
 * CLI_FAIL after reporting. */
static int import_lines(import_run *r) {
  char *line;
  size_t len;
  int rc;
  tsv_error err;
  while ((rc = tsv_read_line(&r->rd, &line, &len)) > 0) {
    if (len == 0) continue; /* blank line */
    rc = tsv_parse_doc(line, len, &r->doc, &err);
    if (rc == -ENOMEM) return cli_error("%s", strerror(ENOMEM));
    if (rc) return cli_line_error(r->file, r->rd.line, err.reason);
    if (r->txn) {
      int st = tern_put(r->txn, r->doc.key, r->doc.klen, r->doc.val, r->doc.vlen, r->doc.terms,
                        r->doc.nterms);
      if (st) return put_failed(r, st);
    }
    if (++r->docs % PROGRESS_EVERY == 0) progress_update(&r->prog, r->docs, r->rd.bytes_in);
  }
  if (rc == 0) return CLI_OK;
  if (rc == -E2BIG) return cli_line_error(r->file, r->rd.line + 1, "line longer than 1 GiB");
  return cli_error("%s: %s", r->file ? r->file : "standard input", strerror(-rc));
}

static void print_summary(const import_run *r) {
  double secs = progress_elapsed(&r->prog);
  double rate = secs > 0 ? (double)r->docs / secs : 0;
  if (r->dry_run)
    fprintf(stderr, "%s: %llu %s checked in %.2f s (%.0f docs/s)\n", r->dir,
            (unsigned long long)r->docs, cli_plural(r->docs, "document", "documents"), secs, rate);
  else {
    char phases[256];
    progress_phases(&r->prog, phases, sizeof phases);
    fprintf(stderr, "%s: %llu %s imported in %.2f s (%.0f docs/s; commit %.2f s; %s)\n", r->dir,
            (unsigned long long)r->docs, cli_plural(r->docs, "document", "documents"), secs, rate,
            r->commit_secs, phases);
  }
}

/* Opens the index and the transaction, imports, commits. */
static int import_into_index(import_run *r, uint64_t size) {
  tern_index *idx;
  int absent, fresh = cli_dir_is_new(r->dir, &absent);
  if (cli_open_create(&idx, r->dir, &r->co)) return CLI_FAIL;
  int st = tern_txn_begin(&r->txn, idx, TERN_TXN_BULK);
  if (st) return cli_close(idx, r->dir, cli_fail(r->dir, st));
  st = tern_txn_set_memory(r->txn, memory_bound(r, size));
  if (st) {
    int rc = cli_fail(r->dir, st); /* before tern_abort, which clears the message */
    tern_abort(r->txn);
    r->txn = NULL;
    return cli_close(idx, r->dir, rc);
  }
  if (!r->quiet) tern_txn_set_progress(r->txn, progress_commit, &r->prog); /* phase times */
  int rc = import_lines(r);
  if (rc == CLI_OK) {
    double t0 = progress_elapsed(&r->prog);
    st = tern_commit(r->txn);
    r->commit_secs = progress_elapsed(&r->prog) - t0;
    progress_end(&r->prog);
    if (st) rc = cli_fail(r->dir, st);
  } else {
    progress_end(&r->prog);
    tern_abort(r->txn);
  }
  r->txn = NULL;
  rc = cli_close(idx, r->dir, rc);
  if (rc != CLI_OK && fresh) cli_remove_new_index(r->dir, absent); /* a failed import leaves no index */
  return rc;
}

static int run_import(import_run *r) {
  struct stat sb;
  uint64_t size = fstat(r->fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
  if (size) posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (tsv_reader_init(&r->rd, r->fd, READ_BUFFER)) return cli_error("%s", strerror(ENOMEM));
  tsv_doc_init(&r->doc);
  progress_start(&r->prog, !r->quiet, size);
  int rc;
  if (r->dry_run) {
    rc = import_lines(r);
    progress_end(&r->prog);
  } else {
    rc = import_into_index(r, size);
  }
  if (r->prog.ticking) progress_end(&r->prog); /* a failure before the commit */
  if (rc == CLI_OK && !r->quiet) print_summary(r);
  tsv_doc_free(&r->doc);
  tsv_reader_free(&r->rd);
  return rc;
}

int cmd_import(int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_CREATE_LONGOPTS,
      {"dry-run", no_argument, NULL, 'n'},
      {"quiet", no_argument, NULL, 'q'},
      {"memory", required_argument, NULL, 'm'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  import_run r;
  memset(&r, 0, sizeof r);
  cli_create_opts_init(&r.co);
  /* The merges that spilled segments make due read them by pread: through
   * the mapping, every page read would stay in the process's resident
   * set, up to the size of the index. */
  r.co.open_flags = TERN_PREAD;
  int c;
  while ((c = cli_getopt(argc, argv, ":nqh", longopts)) != -1) {
    switch (c) {
    case 'h': return cli_help("import");
    case 'n': r.dry_run = 1; break;
    case 'q': r.quiet = 1; break;
    case 'm':
      if (cli_parse_size(optarg, &r.memory) || r.memory < MEMORY_MIN)
        return cli_usage_error("import", "--memory '%s': a size of 32M or more wanted", optarg);
      break;
    case '?': return CLI_FAIL;
    default:
      if (cli_create_option(&r.co, "import", c, optarg)) return CLI_FAIL;
    }
  }
  int nargs = argc - optind;
  if (nargs < 1) return cli_usage_error("import", "missing DIR");
  if (nargs > 2) return cli_usage_error("import", "too many arguments");
  r.dir = argv[optind];
  r.file = nargs == 2 && strcmp(argv[optind + 1], "-") ? argv[optind + 1] : NULL;
  if (r.file) {
    /* Before the index: a mistyped file name must not create an index. */
    r.fd = open(r.file, O_RDONLY | O_CLOEXEC);
    if (r.fd < 0) return cli_error("%s: %s", r.file, strerror(errno));
    struct stat sb;
    if (fstat(r.fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      close(r.fd);
      return cli_error("%s: %s", r.file, strerror(EISDIR));
    }
  }
  int rc = run_import(&r);
  if (r.file) close(r.fd);
  return rc;
}

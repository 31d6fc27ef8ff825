/* SPDX-License-Identifier: MIT */
/*
 * build_ranges.c — --from, --to and --split-at of `tern build`
 * (build_ranges.h).
 */
#include "build_ranges.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"
#include "tsv.h"

static int key_cmp(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

int ranges_set_from(build_ranges *r, char *arg) {
  tern_slice k;
  if (cli_key_operand(arg, &k)) return -1;
  r->from = arg;
  r->from_len = k.len;
  r->bounded = 1;
  return 0;
}

int ranges_set_to(build_ranges *r, char *arg) {
  tern_slice k;
  if (cli_key_operand(arg, &k)) return -1;
  r->to = arg;
  r->to_len = k.len;
  r->bounded = 1;
  return 0;
}

int ranges_keeps(const build_ranges *r, const void *key, size_t klen) {
  if (r->from && key_cmp(key, klen, r->from, r->from_len) < 0) return 0;
  if (r->to && key_cmp(key, klen, r->to, r->to_len) >= 0) return 0;
  return 1;
}

int ranges_drops_column(const build_ranges *r, const char *col, size_t len) {
  /* Most keys need no decoding: compare them as they stand. */
  if (!memchr(col, '\\', len)) return len && len <= TERN_KEY_MAX && !ranges_keeps(r, col, len);
  char buf[ESC_ENCODED_MAX(TERN_KEY_MAX) + 1];
  if (len > sizeof buf) return 0;
  memcpy(buf, col, len);
  size_t klen;
  tsv_error err;
  if (tsv_parse_key(buf, len, &klen, &err)) return 0;
  return !ranges_keeps(r, buf, klen);
}

size_t ranges_part_of(const build_ranges *r, size_t part, const void *key, size_t klen) {
  while (part < r->ncuts && key_cmp(key, klen, r->cuts[part].data, r->cuts[part].len) >= 0)
    part++;
  return part;
}

static const char *escaped(const void *key, size_t len, char out[CLI_QUOTE_MAX]) {
  char esc[ESC_ENCODED_MAX(TERN_KEY_MAX) + 1];
  size_t n = esc_encode(key, len, esc);
  return cli_quote(esc, n, out);
}

static int check_bounds(const build_ranges *r) {
  if (r->from && r->to && key_cmp(r->from, r->from_len, r->to, r->to_len) >= 0) {
    char a[CLI_QUOTE_MAX], b[CLI_QUOTE_MAX];
    return cli_error("--from '%s' is not below --to '%s': an empty range",
                     escaped(r->from, r->from_len, a), escaped(r->to, r->to_len, b));
  }
  return 0;
}

/* The cut just read, against the one before and the bounds. */
static int check_cut(const build_ranges *r, const char *file, uint64_t line) {
  const tern_slice *k = &r->cuts[r->ncuts - 1];
  char q[CLI_QUOTE_MAX], why[CLI_QUOTE_MAX + 80];
  const char *what = NULL;
  if (r->ncuts > 1 && key_cmp(k->data, k->len, k[-1].data, k[-1].len) <= 0)
    what = "is not above the key before it (keys must ascend strictly)";
  else if (r->from && key_cmp(k->data, k->len, r->from, r->from_len) <= 0)
    what = "is not above --from";
  else if (r->to && key_cmp(k->data, k->len, r->to, r->to_len) >= 0)
    what = "is not below --to";
  if (!what) return 0;
  snprintf(why, sizeof why, "split key '%s' %s", escaped(k->data, k->len, q), what);
  cli_line_error(file, line, why);
  return -1;
}

static int add_cut(build_ranges *r, const char *key, size_t len) {
  tern_slice *c = realloc(r->cuts, (r->ncuts + 1) * sizeof *c);
  if (!c) return -1;
  r->cuts = c;
  char *copy = malloc(len);
  if (!copy) return -1;
  memcpy(copy, key, len);
  r->cuts[r->ncuts++] = (tern_slice){copy, len};
  return 0;
}

static int read_cuts(build_ranges *r, tsv_reader *rd, const char *file) {
  char *line;
  size_t len;
  int rc;
  while ((rc = tsv_read_line(rd, &line, &len)) > 0) {
    if (len == 0) continue;
    size_t klen;
    tsv_error err;
    if (tsv_parse_key(line, len, &klen, &err)) return cli_line_error(file, rd->line, err.reason);
    if (add_cut(r, line, klen)) return cli_error("%s", strerror(ENOMEM));
    if (check_cut(r, file, rd->line)) return -1;
  }
  if (rc == -E2BIG) return cli_line_error(file, rd->line + 1, "line longer than 1 GiB");
  if (rc < 0) return cli_error("%s: %s", file, strerror(-rc));
  return 0;
}

int ranges_load(build_ranges *r, const char *file) {
  if (check_bounds(r)) return -1;
  if (!file) return 0;
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cli_error("%s: %s", file, strerror(errno));
  tsv_reader rd;
  int rc = tsv_reader_init(&rd, fd, 1 << 16) ? cli_error("%s", strerror(ENOMEM))
                                             : read_cuts(r, &rd, file);
  tsv_reader_free(&rd);
  close(fd);
  return rc ? -1 : 0;
}

void ranges_free(build_ranges *r) {
  for (size_t i = 0; i < r->ncuts; i++)
    free((void *)r->cuts[i].data);
  free(r->cuts);
  r->cuts = NULL;
  r->ncuts = 0;
}

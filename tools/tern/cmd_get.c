/* SPDX-License-Identifier: MIT */
/*
 * cmd_get.c — `tern get`: values of keys, in the order given.
 *
 * Keys are looked up with tern_get_batch in chunks (up to CHUNK_KEYS keys or
 * CHUNK_BYTES of key bytes), so a cold lookup of many keys reads each block
 * once and in file order, while memory stays bounded for any input size.
 * The chunk's key bytes live in one arena reused from chunk to chunk.
 * Results stream: a malformed key stops the command (exit 2) after the
 * results of every key before it, wherever it falls in a chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "out.h"

enum { CHUNK_KEYS = 100000, CHUNK_BYTES = 16 << 20 };

typedef struct get_chunk {
  char *arena;
  size_t used, cap;
  size_t *offs; /* of each key in the arena (the arena may move while filling) */
  tern_slice *keys;
  size_t n;
  uint64_t missing;
} get_chunk;

static int chunk_add(get_chunk *c, const tern_slice *key) {
  if (c->used + key->len > c->cap) {
    size_t ncap = c->cap ? c->cap : 1 << 20;
    while (ncap < c->used + key->len)
      ncap *= 2;
    char *na = realloc(c->arena, ncap);
    if (!na) return -ENOMEM;
    c->arena = na;
    c->cap = ncap;
  }
  memcpy(c->arena + c->used, key->data, key->len);
  c->offs[c->n] = c->used;
  c->keys[c->n].len = key->len;
  c->used += key->len;
  c->n++;
  return 0;
}

static int print_result(void *payload, size_t i, int status, const void *val, size_t vlen) {
  get_chunk *c = payload;
  const tern_slice *k = &c->keys[i];
  if (status == TERN_OK) {
    out_escaped(&g_out, k->data, k->len);
    out_char(&g_out, '\t');
    out_escaped(&g_out, val, vlen);
    out_char(&g_out, '\n');
  } else {
    c->missing++;
    out_str(&g_err, "not found: ");
    out_escaped(&g_err, k->data, k->len);
    out_char(&g_err, '\n');
  }
  return 0;
}

/* Looks up the chunk's keys and empties it. */
static int chunk_run(get_chunk *c, tern_snapshot *snap) {
  for (size_t i = 0; i < c->n; i++)
    c->keys[i].data = c->arena + c->offs[i];
  int st = c->n ? tern_get_batch(snap, c->keys, c->n, print_result, c) : TERN_OK;
  c->n = 0;
  c->used = 0;
  return st;
}

/* Feeds every key through chunks; returns CLI_OK, CLI_MISSING or CLI_FAIL. */
static int get_all(const char *dir, tern_snapshot *snap, cli_keys *ks) {
  get_chunk c;
  memset(&c, 0, sizeof c);
  c.offs = malloc(CHUNK_KEYS * sizeof *c.offs);
  c.keys = malloc(CHUNK_KEYS * sizeof *c.keys);
  int rc = CLI_OK, more;
  tern_slice key;
  if (!c.offs || !c.keys) rc = cli_error("%s", strerror(ENOMEM));
  while (rc == CLI_OK && (more = cli_keys_next(ks, &key)) != 0) {
    if (more < 0) {
      /* Streaming: the keys before a malformed one are answered, as they
       * would be had the bad key come in a later chunk. */
      int st = chunk_run(&c, snap);
      rc = st ? cli_fail(dir, st) : CLI_FAIL;
    } else if (chunk_add(&c, &key)) {
      rc = cli_error("%s", strerror(ENOMEM));
    } else if (c.n == CHUNK_KEYS || c.used >= CHUNK_BYTES) {
      int st = chunk_run(&c, snap);
      if (st) rc = cli_fail(dir, st);
    }
  }
  if (rc == CLI_OK) {
    int st = chunk_run(&c, snap);
    if (st) rc = cli_fail(dir, st);
  }
  if (rc == CLI_OK && c.missing) rc = CLI_MISSING;
  free(c.arena);
  free(c.offs);
  free(c.keys);
  return rc;
}

int cmd_get(int argc, char **argv) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("get");
    return CLI_FAIL;
  }
  if (argc - optind < 1) return cli_usage_error("get", "missing DIR");
  if (argc - optind < 2) return cli_usage_error("get", "missing KEY (or - to read keys)");
  const char *dir = argv[optind];
  cli_keys ks;
  if (cli_keys_open(&ks, argc - optind - 1, argv + optind + 1)) return CLI_FAIL;
  tern_index *idx;
  tern_snapshot *snap;
  int rc = CLI_FAIL;
  if (cli_open(&idx, dir, TERN_RDONLY) == 0) {
    int st = tern_snapshot_open(&snap, idx);
    if (st) {
      rc = cli_fail(dir, st);
    } else {
      rc = get_all(dir, snap, &ks);
      tern_snapshot_close(snap);
    }
    rc = cli_close(idx, dir, rc);
  }
  cli_keys_close(&ks);
  return rc;
}

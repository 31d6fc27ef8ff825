/* SPDX-License-Identifier: MIT */
/*
 * cmd_stats.c — `tern stats`: counts and sizes, as a table or as JSON.
 */
#include "cli.h"
#include "out.h"

/* Bytes of the segments' files (the catalog is counted apart). */
static uint64_t total_bytes(const tern_stats *s) {
  uint64_t b = 0;
  for (size_t i = 0; i < s->nsegments; i++)
    b += s->segments[i].bytes;
  return b;
}

static void json_u64(const char *name, uint64_t v, int comma) {
  out_json_string(&g_out, name);
  out_char(&g_out, ':');
  out_u64(&g_out, v);
  if (comma) out_char(&g_out, ',');
}

static void json_segment(const tern_segment_stats *g) {
  out_char(&g_out, '{');
  json_u64("id", g->id, 1);
  json_u64("max_doc", g->max_doc, 1);
  json_u64("deleted", g->deleted, 1);
  out_str(&g_out, "\"livedocs_form\":");
  out_json_string(&g_out, g->livedocs_form ? g->livedocs_form : "");
  out_char(&g_out, ',');
  json_u64("livedocs_bytes", g->livedocs_bytes, 1);
  json_u64("terms", g->terms, 1);
  json_u64("pulsed_terms", g->pulsed_terms, 1);
  json_u64("bytes", g->bytes, 1);
  json_u64("bytes_terms", g->bytes_terms, 1);
  json_u64("bytes_index", g->bytes_index, 1);
  json_u64("bytes_postings", g->bytes_postings, 1);
  json_u64("bytes_filter", g->bytes_filter, 1);
  json_u64("bytes_values", g->bytes_values, 0);
  out_char(&g_out, '}');
}

static void print_json(const char *dir, const tern_stats *s, const tern_options *o) {
  out_str(&g_out, "{\"dir\":");
  out_json_string(&g_out, dir);
  out_char(&g_out, ',');
  json_u64("docs", s->docs, 1);
  json_u64("deleted", s->deleted, 1);
  json_u64("buffered", s->buffered, 1);
  json_u64("bytes", total_bytes(s), 1);
  json_u64("catalog_bytes", s->catalog_bytes, 1);
  json_u64("total_bytes", total_bytes(s) + s->catalog_bytes, 1);
  json_u64("filter_bytes", s->filter_bytes, 1);
  out_str(&g_out, "\"last_error\":");
  if (s->last_error) {
    out_char(&g_out, '{');
    out_str(&g_out, "\"status\":");
    out_json_string(&g_out, tern_strerror(s->last_error));
    out_str(&g_out, ",\"message\":");
    out_json_string(&g_out, s->last_error_msg);
    out_char(&g_out, ',');
    json_u64("commit", s->last_error_commit, 0);
    out_char(&g_out, '}');
  } else {
    out_str(&g_out, "null");
  }
  out_char(&g_out, ',');
  json_u64("skipped_segments", s->nskipped, 1);
  const tern_counters *k = &s->counters; /* this process's: what stats itself did */
  out_str(&g_out, "\"counters\":{");
  json_u64("gets", k->gets, 1);
  json_u64("commits", k->commits, 1);
  json_u64("flushes", k->flushes, 1);
  json_u64("merges", k->merges, 1);
  json_u64("reads", k->reads, 1);
  json_u64("bytes_read", k->bytes_read, 1);
  json_u64("pages_checked", k->pages_checked, 1);
  json_u64("cache_hits", k->cache_hits, 0);
  out_str(&g_out, "},\"options\":{");
  json_u64("threshold", o->pulsing_threshold, 1);
  json_u64("inline_max", o->inline_value_max, 1);
  json_u64("bloom_bits", o->bloom_bits_per_key, 1);
  json_u64("write_buffer_bytes", o->write_buffer_bytes, 0);
  out_str(&g_out, "},\"segments\":[");
  for (size_t i = 0; i < s->nsegments; i++) {
    if (i) out_char(&g_out, ',');
    json_segment(&s->segments[i]);
  }
  out_str(&g_out, "]}\n");
}

static void print_table(const char *dir, const tern_stats *s, const tern_options *o) {
  char line[512];
  snprintf(line, sizeof line,
           "index     %s\n"
           "docs      %llu live, %llu deleted, %llu buffered\n"
           "options   threshold %u, inline-max %u, bloom-bits %u\n"
           "segments  %zu, %llu bytes\n"
           "catalog   %llu bytes\n"
           "total     %llu bytes\n",
           dir, (unsigned long long)s->docs, (unsigned long long)s->deleted,
           (unsigned long long)s->buffered, o->pulsing_threshold, o->inline_value_max,
           o->bloom_bits_per_key, s->nsegments, (unsigned long long)total_bytes(s),
           (unsigned long long)s->catalog_bytes,
           (unsigned long long)(total_bytes(s) + s->catalog_bytes));
  out_str(&g_out, line);
  if (s->last_error) {
    snprintf(line, sizeof line, "warning   after commit %llu: %s: %s\n",
             (unsigned long long)s->last_error_commit, tern_strerror(s->last_error),
             s->last_error_msg);
    out_str(&g_out, line);
  }
  if (s->nskipped) {
    snprintf(line, sizeof line, "skipped   %zu segments merges skip (they failed verification)\n",
             s->nskipped);
    out_str(&g_out, line);
  }
  if (!s->nsegments) return;
  out_str(&g_out, "\n      id    max_doc    deleted livedocs  ld_bytes      terms     pulsed"
                  "      bytes  (terms index postings filter values)\n");
  for (size_t i = 0; i < s->nsegments; i++) {
    const tern_segment_stats *g = &s->segments[i];
    snprintf(line, sizeof line,
             "%8llu %10llu %10llu %-8s %9llu %10llu %10llu %10llu  (%llu %llu %llu %llu %llu)\n",
             (unsigned long long)g->id, (unsigned long long)g->max_doc,
             (unsigned long long)g->deleted, g->livedocs_form ? g->livedocs_form : "-",
             (unsigned long long)g->livedocs_bytes, (unsigned long long)g->terms,
             (unsigned long long)g->pulsed_terms, (unsigned long long)g->bytes,
             (unsigned long long)g->bytes_terms, (unsigned long long)g->bytes_index,
             (unsigned long long)g->bytes_postings, (unsigned long long)g->bytes_filter,
             (unsigned long long)g->bytes_values);
    out_str(&g_out, line);
  }
}

int cmd_stats(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c, json = 0;
  while ((c = cli_getopt(argc, argv, ":h", longopts)) != -1) {
    if (c == 'h') return cli_help("stats");
    if (c != 'j') return CLI_FAIL;
    json = 1;
  }
  if (argc - optind < 1) return cli_usage_error("stats", "missing DIR");
  if (argc - optind > 1) return cli_usage_error("stats", "too many arguments");
  const char *dir = argv[optind];
  tern_index *idx;
  if (cli_open(&idx, dir, TERN_RDONLY)) return CLI_FAIL;
  tern_stats *s;
  tern_options o;
  int st = tern_get_options(idx, &o);
  if (!st) st = tern_stats_get(&s, idx);
  if (!st) {
    if (json)
      print_json(dir, s, &o);
    else
      print_table(dir, s, &o);
    tern_stats_free(s);
  }
  return cli_close(idx, dir, st ? cli_fail(dir, st) : CLI_OK);
}

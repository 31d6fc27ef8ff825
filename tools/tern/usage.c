/* SPDX-License-Identifier: MIT */
/*
 * usage.c — the usage texts of tern and its subcommands (docs/cli.md says
 * the same at length).
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

typedef struct usage {
  const char *cmd;
  const char *text;
} usage;

#define ESCAPES "Keys, values, fields and terms are written escaped: \\\\ \\t \\n \\r and \\xHH.\n"

static const usage k_usages[] = {
    {NULL, "usage: tern COMMAND [OPTIONS] DIR ...\n"
           "\n"
           "tern keeps documents (key, value, field:term pairs) in an index directory.\n"
           "\n"
           "commands:\n"
           "  import   load documents from TSV (one transaction)\n"
           "  get      print the values of keys\n"
           "  put      insert or replace one document\n"
           "  delete   delete documents by key\n"
           "  search   keys of the documents having all the given terms\n"
           "  scan     documents in key order, in a range or with a prefix\n"
           "  terms    a field's terms with their document counts\n"
           "  backup   a verified copy of the index, taken while writers go on\n"
           "  build    a segment built from TSV outside any index (sorted, bounded memory)\n"
           "  split    keys cutting an index (or a TSV file) into N equal parts\n"
           "  export   a key range of the index as a built segment\n"
           "  ingest   add segments built elsewhere, in one commit\n"
           "  delete-range  delete every document of a key range\n"
           "  dump     every document with its value and terms, as import reads them\n"
           "  stats    counts and sizes of the index and its segments\n"
           "  verify   check every checksum and invariant\n"
           "  compact  merge all segments into one without deleted documents\n"
           "  flush    write buffered writes as a segment\n"
           "  create   create an empty index\n"
           "  help     this text, or `tern help COMMAND`\n"
           "\n"
           "options: tern --version, tern --help, tern COMMAND --help\n" ESCAPES
           "exit status: 0 ok, 1 some keys not found (get, delete), 2 usage or error,\n"
           "3 verify found corruption.\n"},
    {"import",
     "usage: tern import [OPTIONS] DIR [FILE]\n"
     "\n"
     "Reads TSV lines from FILE (or standard input, also when FILE is -):\n"
     "    key<TAB>value[<TAB>field:term]...\n"
     "and writes them to the index in DIR as one transaction, creating the index\n"
     "when absent.  A later line with the same key replaces the earlier one.  A\n"
     "malformed line aborts the import, leaving the index unchanged, with\n"
     "`FILE:LINE: reason` on stderr.  Blank lines are skipped; CRLF is accepted.\n" ESCAPES "\n"
     "options (the --threshold, --inline-max and --bloom-bits options apply when\n"
     "the index is created; given for an existing index, they must match it):\n"
     "  --threshold N       pulsing threshold: doc ids of terms in at most N\n"
     "                      documents are inlined in the dictionary (0-64; 1)\n"
     "  --inline-max BYTES  values up to BYTES are stored in the key's entry\n"
     "                      (0-1024; 64)\n"
     "  --bloom-bits N      membership filter bits per key (0-64; 10; 0 = none)\n"
     "  --memory BYTES      bound the transaction's memory (K, M, G suffixes; at\n"
     "                      least 32M; default: FILE's size within 32M-1G, 1G\n"
     "                      for a pipe): past it, the documents read so far\n"
     "                      are written as a segment and freed, still one\n"
     "                      transaction\n"
     "  -n, --dry-run       parse and check the input only; DIR is not touched\n"
     "  -q, --quiet         no progress bar and no summary line\n"
     "  -h, --help          this text\n"},
    {"get", "usage: tern get [OPTIONS] DIR KEY...\n"
            "       tern get [OPTIONS] DIR -\n"
            "\n"
            "Prints `key<TAB>value` for each key found, in the order given, and\n"
            "`not found: KEY` on stderr for each key missing.  With -, reads the keys\n"
            "from standard input, one a line (the line up to its first TAB, so a TSV\n"
            "import file works too).  Exit status 1 when a key was missing.\n" ESCAPES
            "Use -- before keys starting with '-'.\n"
            "\n"
            "options:\n"
            "  -h, --help  this text\n"},
    {"put", "usage: tern put [OPTIONS] DIR KEY VALUE [field:term]...\n"
            "\n"
            "Inserts the document, or replaces the one KEY has, in one transaction.\n" ESCAPES "\n"
            "options:\n"
            "  -h, --help  this text\n"},
    {"delete", "usage: tern delete [OPTIONS] DIR KEY...\n"
               "       tern delete [OPTIONS] DIR -\n"
               "\n"
               "Deletes the documents of the keys (read from standard input, one a line,\n"
               "with -) in one transaction.  A key with no document is reported as\n"
               "`not found: KEY` on stderr and the exit status is 1; the others are still\n"
               "deleted.\n" ESCAPES "\n"
               "options:\n"
               "  -h, --help  this text\n"},
    {"search", "usage: tern search [OPTIONS] DIR field:term [field:term]...\n"
               "\n"
               "Prints the keys of the live documents having all the terms, one a line,\n"
               "in key byte order.  A term splits at its first ':'.\n" ESCAPES "\n"
               "options:\n"
               "  -v, --values  print `key<TAB>value` lines\n"
               "  -c, --count   print only the number of documents\n"
               "  -h, --help    this text\n"},
    {"stats", "usage: tern stats [OPTIONS] DIR\n"
              "\n"
              "Prints the counts and sizes of the index and of each segment.\n"
              "\n"
              "options:\n"
              "  --json      one JSON object: docs, deleted, buffered, bytes, options, and\n"
              "              segments[] with id, max_doc, deleted, livedocs_form,\n"
              "              livedocs_bytes, terms, pulsed_terms, bytes, bytes_terms,\n"
              "              bytes_index, bytes_postings, bytes_filter, bytes_values\n"
              "  -h, --help  this text\n"},
    {"verify", "usage: tern verify [OPTIONS] DIR\n"
               "\n"
               "Checks every checksum and structural invariant of the index.  Prints\n"
               "`DIR: ok` and exits 0 when sound; names the bad file and exits 3 when not.\n"
               "A directory of segment files without a catalog (the OUT of `tern build`\n"
               "or `tern export`) is checked as a built segment on its own.\n"
               "\n"
               "options:\n"
               "  -h, --help  this text\n"},
    {"compact", "usage: tern compact [OPTIONS] DIR\n"
                "\n"
                "Merges every segment and the buffered writes into one segment without\n"
                "deleted documents.\n"
                "\n"
                "options:\n"
                "  -h, --help  this text\n"},
    {"ingest", "usage: tern ingest [OPTIONS] DIR SEG...\n"
               "\n"
               "Adds the segments SEG... (each a directory holding exactly one segment's\n"
               "files) to the index in DIR in one commit, all or nothing.  Each is verified\n"
               "whole first, then hard-linked into DIR (copied across file systems; SEG is\n"
               "left as it is).  A key DIR already has: the ingested document wins.\n"
               "\n"
               "options:\n"
               "  --behind      keys DIR already has keep their document\n"
               "  --later-wins  a key in two SEGs: the later one wins (else an error)\n"
               "  -h, --help    this text\n"},
    {"delete-range", "usage: tern delete-range [OPTIONS] DIR\n"
                     "\n"
                     "Deletes every document whose key is in the range, in one commit: segments\n"
                     "wholly inside it are dropped, the others' documents marked deleted.\n"
                     "Without options: every document.\n" ESCAPES "\n"
                     "options:\n"
                     "  --prefix P  keys starting with P\n"
                     "  --from K    from the first key >= K\n"
                     "  --to K      up to the last key < K (exclusive)\n"
                     "  -h, --help  this text\n"},
    {"flush", "usage: tern flush [OPTIONS] DIR\n"
              "\n"
              "Writes the buffered writes as a segment.\n"
              "\n"
              "options:\n"
              "  -h, --help  this text\n"},
    {"create", "usage: tern create [OPTIONS] DIR\n"
               "\n"
               "Creates an empty index in DIR (nothing to do when one exists with the\n"
               "options given).\n"
               "\n"
               "options:\n"
               "  --threshold N       pulsing threshold (0-64; 1)\n"
               "  --inline-max BYTES  largest value stored in the key's entry (0-1024; 64)\n"
               "  --bloom-bits N      membership filter bits per key (0-64; 10)\n"
               "  -h, --help          this text\n"},
    {"scan", "usage: tern scan [OPTIONS] DIR\n"
             "\n"
             "Prints `key<TAB>value` for the live documents in key byte order.  Exit 0\n"
             "also when nothing matches.\n" ESCAPES "\n"
             "options:\n"
             "  --prefix P    only keys starting with P\n"
             "  --from K      from the first key >= K\n"
             "  --to K        up to the last key < K (exclusive)\n"
             "  --reverse     in descending order\n"
             "  --limit N     at most N documents\n"
             "  --keys-only   print the keys only\n"
             "  --count       print only the number of documents\n"
             "  -h, --help    this text\n"},
    {"terms", "usage: tern terms [OPTIONS] DIR FIELD\n"
              "\n"
              "Prints `term<TAB>docfreq` for the terms of FIELD in byte order, docfreq\n"
              "counting live documents only (terms with none are not listed).  The\n"
              "primary key is not a field: use `tern scan`.\n" ESCAPES "\n"
              "options:\n"
              "  --prefix P   only terms starting with P\n"
              "  --limit N    at most N terms\n"
              "  -h, --help   this text\n"},
    {"backup", "usage: tern backup [OPTIONS] DIR DEST\n"
               "\n"
               "Copies the commit current now into DEST (absent or an empty directory)\n"
               "while writers go on: segment files hard-linked where possible, else\n"
               "copied, and a catalog of that commit only.  The copy is opened and\n"
               "verified before it appears under DEST.  Prints `DEST: ok, N documents`.\n"
               "\n"
               "options:\n"
               "  -h, --help  this text\n"},
    {"build",
     "usage: tern build [OPTIONS] OUT [FILE]\n"
     "\n"
     "Reads TSV lines as `tern import` does (from FILE, or standard input, also\n"
     "when FILE is -), in any order, and writes them as one segment built outside\n"
     "any index into the directory OUT (absent or empty), to be verified, copied\n"
     "and ingested elsewhere.  The input is sorted in bounded memory: sorted runs\n"
     "are spilled to temporary files (unlinked at once) and merged.  A key given\n"
     "twice is an error naming both lines.  OUT appears only once complete.\n" ESCAPES "\n"
     "options:\n"
     "  --threshold N       pulsing threshold (0-64; 1), as the index's\n"
     "  --inline-max BYTES  largest value stored in the key's entry (0-1024; 128)\n"
     "  --bloom-bits N      membership filter bits per key (0-64; 10)\n"
     "  --memory BYTES      memory for sorting and building, K/M/G suffixes\n"
     "                      (at least 32M; 512M); secondary terms come on top\n"
     "  --tmpdir DIR        where sorted runs are spilled (OUT's directory)\n"
     "  --from K            keep only keys >= K (lines of other keys are dropped\n"
     "                      as soon as their key is read)\n"
     "  --to K              keep only keys < K\n"
     "  --split-at CUTS     cut the kept keys at the keys of the file CUTS (one a\n"
     "                      line, ascending; as `tern split` prints them), in one\n"
     "                      pass: OUT holds one segment directory per part, 0, 1,\n"
     "                      ... (zero-padded), part i from cut i to cut i+1\n"
     "  -q, --quiet         no progress bar and no summary line\n"
     "  -h, --help          this text\n"},
    {"split", "usage: tern split [OPTIONS] DIR N\n"
              "       tern split [OPTIONS] FILE N\n"
              "\n"
              "Prints the N-1 keys that cut the live keys of the index into N parts of\n"
              "about equal size (within 10% for parts of more than ~50 terms blocks),\n"
              "escaped, one a line, ascending: part i holds the keys from line i-1\n"
              "(inclusive) to line i (exclusive).  Read from the terms index, without\n"
              "scanning the keys.  Fewer lines when there are too few keys.\n"
              "\n"
              "Given a TSV file (- for standard input) instead of an index: the same from\n"
              "a sample of its keys (2048 chunks of 4 KiB spread over a regular file over\n"
              "32 MiB; otherwise the whole input, into a reservoir of 131072 keys), for\n"
              "`tern build --split-at`.\n" ESCAPES "\n"
              "options:\n"
              "  -h, --help  this text\n"},
    {"export", "usage: tern export [OPTIONS] DIR OUT\n"
               "\n"
               "Writes the live documents of a key range, with their values and terms, as\n"
               "a built segment in OUT (absent or empty; see `tern build`), with the\n"
               "index's options.  Prints `OUT: ok, N documents`.\n" ESCAPES "\n"
               "options:\n"
               "  --prefix P    only keys starting with P\n"
               "  --from K      from the first key >= K\n"
               "  --to K        up to the last key < K (exclusive)\n"
               "  -h, --help    this text\n"},
    {"dump", "usage: tern dump [OPTIONS] DIR\n"
             "\n"
             "Prints every live document as `key<TAB>value<TAB>field:term...`, in key\n"
             "byte order, with all its terms: the TSV `tern import` reads, so that\n"
             "`tern dump A | tern import B` makes B answer as A does.\n" ESCAPES "\n"
             "options:\n"
             "  --prefix P    only keys starting with P\n"
             "  --from K      from the first key >= K\n"
             "  --to K        up to the last key < K (exclusive)\n"
             "  -h, --help    this text\n"},
    {"help", "usage: tern help [COMMAND]\n"
             "\n"
             "Prints the overview, or the usage of COMMAND.\n"},
};

static const usage *find_usage(const char *cmd) {
  for (size_t i = 0; i < sizeof k_usages / sizeof k_usages[0]; i++) {
    const char *c = k_usages[i].cmd;
    if (cmd == c || (cmd && c && !strcmp(cmd, c))) return &k_usages[i];
  }
  return NULL;
}

int cli_has_usage(const char *cmd) { return cmd && find_usage(cmd) != NULL; }

int cli_help(const char *cmd) {
  const usage *u = find_usage(cmd);
  fputs(u ? u->text : k_usages[0].text, stdout);
  return CLI_OK;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (cmd)
    fprintf(stderr, "tern %s: ", cmd);
  else
    fputs("tern: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  const usage *u = find_usage(cmd);
  fputs(u ? u->text : k_usages[0].text, stderr);
  return CLI_FAIL;
}

/* SPDX-License-Identifier: MIT */
/*
 * main.c — the `tern` command: finds the subcommand and runs it.
 * docs/cli.md describes every subcommand.
 */
#include <string.h>

#include "cli.h"
#include "out.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
} command;

static int cmd_help(int argc, char **argv) {
  if (argc > 2) return cli_usage_error("help", "too many arguments");
  if (argc == 2 && !cli_has_usage(argv[1]))
    return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
  return cli_help(argc == 2 ? argv[1] : NULL);
}

static const command k_commands[] = {
    {"import", cmd_import}, {"get", cmd_get},         {"put", cmd_put},
    {"delete", cmd_delete}, {"search", cmd_search},   {"stats", cmd_stats},
    {"verify", cmd_verify}, {"compact", cmd_compact}, {"flush", cmd_flush},
    {"create", cmd_create}, {"help", cmd_help},
    {"scan", cmd_scan},
    {"terms", cmd_terms},
    {"backup", cmd_backup},
    {"build", cmd_build},
    {"split", cmd_split},
    {"export", cmd_export},
    {"ingest", cmd_ingest},
    {"delete-range", cmd_delete_range},
    {"dump", cmd_dump},
};

static int print_version(void) {
#ifdef TERN_VERSION_STRING
  printf("tern %s (libtern %s)\n", TERN_VERSION_STRING, tern_version());
#else
  printf("tern (libtern %s)\n", tern_version());
#endif
  return CLI_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) return cli_usage_error(NULL, "missing command");
  const char *name = argv[1];
  if (!strcmp(name, "--version") || !strcmp(name, "-V")) return print_version();
  if (!strcmp(name, "--help") || !strcmp(name, "-h")) return cmd_help(argc - 1, argv + 1);
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
    if (!strcmp(name, k_commands[i].name)) return out_finish(k_commands[i].run(argc - 1, argv + 1));
  if (name[0] == '-') return cli_usage_error(NULL, "unknown option '%s'", name);
  return cli_usage_error(NULL, "unknown command '%s'", name);
}

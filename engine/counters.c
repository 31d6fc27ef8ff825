/*
 * counters.c — the engine's operation counts (counters.h).
 */
#include "engine/counters.h"

tern_engine_counts tern_engine_count;
_Thread_local tern_get_counts tern_get_count TERN_TLS_IE;

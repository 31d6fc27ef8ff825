/* SPDX-License-Identifier: MIT */
/*
 * txn_spill.h — a bulk transaction over its memory limit
 * (tern_txn_set_memory): the states it moves through in private.
 *
 * A spill is a commit that is not logged: the transaction's operations so
 * far are resolved and written as a segment exactly as tern_commit would,
 * but the edit is applied to a state only the transaction sees (its keys
 * out of older segments and the buffer view, the new segment added), and
 * the transaction's memory is freed.  Its later reads (tern_txn_get,
 * tern_delete, TERN_NOOVERWRITE) and spills build on that state, so later
 * operations win over earlier ones as they do in memory.  The commit
 * installs, in ONE catalog transaction, the difference between the state
 * the transaction began on and its last private state: the spilled
 * segments (with what later operations deleted of them), the new live
 * docs of older segments, the segments dropped, the keys taken out of the
 * buffer.  Until then no catalog record names a spilled segment: a crash
 * leaves files the next writable open removes, an abort removes them.
 */
#ifndef TERN_ENGINE_TXN_SPILL_H
#define TERN_ENGINE_TXN_SPILL_H

#include "engine/state/edit.h"

/* The private state `e` makes of `st` (which must have its buffer view):
 * what tern_log_and_apply would install, without writing the catalog.
 * The caller owns one reference of *out.  REQUIRES: install_mu held. */
int tern_spill_apply(tern_index *idx, tern_state *st, tern_edit *e, tern_state **out);

/* Fills `e` (initialised on `base`, with its buffer view) with the
 * difference from base to `fin`, a private state built on it by spills.
 * *drops: the buffer keys the edit takes out (e->ops points at it; keys
 * point into base's view); free it after the edit.  REQUIRES: install_mu
 * held. */
int tern_spill_compose(tern_index *idx, const tern_state *base, const tern_state *fin,
                       tern_edit *e, tern_mdoc **drops);

#endif

/*
 * rolestatus — the status keys of generations and split brain that both
 * daemons share, and their text form for `twinfs status`: the conflict
 * copies of the state directory (netsync/roles/conflicts.h) as a JSON
 * list, and the renderer of the generation, verdict, diverged paths and
 * conflict copies. The producer runs on a daemon's loop (it lists a
 * folder of the state directory); the renderer in the CLI.
 */
#ifndef TWINFS_ROLESTATUS_H
#define TWINFS_ROLESTATUS_H

#include <stddef.h>

struct ctljson;

/* At most this many conflict copies are listed (all are counted). */
#define ROLESTATUS_LIST_MAX 1000

/* "conflict_copies": N and "conflicts": [{folder, path, size, mtime_ns}]. */
void rolestatus_conflicts_json(struct ctljson *j, const char *state);
/* Prints the generation lines of a status reply for a person. */
void rolestatus_print(const char *json);
/*
 * Calls fn with each object of the array KEY of the reply JSON (a copy of
 * the object's text, flat, which ctljson_get_* reads). Returns the number
 * of objects.
 */
size_t rolestatus_each(const char *json, const char *key,
		       void (*fn)(const char *obj, void *arg), void *arg);

#endif

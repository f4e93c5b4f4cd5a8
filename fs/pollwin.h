/*
 * pollwin — the adaptive window of the ring threads' polling (fs/ring.c,
 * "Polling"): how long a thread polls for the next request, fitted to the
 * gaps between the mount's requests. Pure arithmetic, no state of its
 * own; the caller keeps the window (an atomic in struct ring) and calls
 * this from any ring thread as each request arrives.
 */
#ifndef TWINFS_FS_POLLWIN_H
#define TWINFS_FS_POLLWIN_H

#include <stdint.h>

/* The shortest window: a tight caller's next request comes well within
 * it, so the window grows back from here on its first short gap. */
#define POLLWIN_MIN_NS (10 * 1000ull)

/* The window after a request that came GAP_NS after the one before, from
 * WIN_NS, for the configured MAX_NS (0: no polling, always 0): a gap that
 * fits in MAX_NS widens the window to twice the gap (at most MAX_NS; the
 * next gap of a busy caller is likely alike), a longer gap halves it,
 * down to POLLWIN_MIN_NS (a mount that gets a request now and then would
 * otherwise spin a whole window per request and still wake a CPU). */
uint64_t pollwin_next(uint64_t win_ns, uint64_t gap_ns, uint64_t max_ns);

#endif

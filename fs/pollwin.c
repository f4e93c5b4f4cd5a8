/*
 * pollwin — the adaptive polling window of the ring threads (pollwin.h).
 * Pure function; called by any ring thread (fs/ring.c).
 */
#include "fs/pollwin.h"

uint64_t pollwin_next(uint64_t win_ns, uint64_t gap_ns, uint64_t max_ns)
{
	if (max_ns == 0)
		return 0;
	if (win_ns > max_ns)
		win_ns = max_ns;
	if (gap_ns <= max_ns) {
		if (gap_ns > max_ns / 2)
			return max_ns;
		return 2 * gap_ns > win_ns ? 2 * gap_ns : win_ns;
	}
	return win_ns / 2 >= POLLWIN_MIN_NS ? win_ns / 2 : win_ns;
}

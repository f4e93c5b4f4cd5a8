/*
 * serve — the secondary daemon behind `twinfs serve`: listens for one
 * primary, applies its stream to the store through the receiver, acks
 * durable batches, and answers `status` on STATE/control.sock. One thread
 * with one libevent loop; serve_run() blocks until SIGTERM/SIGINT.
 */
#ifndef TWINFS_SERVE_H
#define TWINFS_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct serve_opts {
	const char *store;
	const char *state;
	const char *listen;	/* HOST:PORT */
	const char *node_name;	/* NULL: the hostname */
	bool insecure;		/* accept non-loopback peers without keys */
	uint32_t heartbeat_s;	/* >= 1 */
};

/*
 * Runs the daemon. Once the port listens and the control socket answers,
 * writes one byte to ready_fd (if >= 0) and closes it, so a detaching
 * parent can exit; if detach is true it then also switches logging to
 * syslog and points stdio at /dev/null. Returns 0 after a clean SIGTERM,
 * or -errno if start-up failed (already logged).
 */
int serve_run(const struct serve_opts *o, int ready_fd, bool detach);

#endif

/*
 * control — the local control socket STATE/control.sock that both daemons
 * (`mount`, `serve`) serve and the CLI (`status`, `sync`) talks to.
 * Protocol (docs/protocol.md, "Control socket"): one request line
 * "COMMAND [ARG...]\n", one JSON object line back, then close.
 * Server side: runs on the daemon's libevent loop and must only be called
 * from that loop's thread. Client side: blocking, any thread.
 */
#ifndef TWINFS_CONTROL_H
#define TWINFS_CONTROL_H

#include <stdint.h>

#include <event2/buffer.h>
#include <event2/event.h>

#define CONTROL_SOCK_NAME "control.sock"
#define CONTROL_LINE_MAX 1024
#define CONTROL_MAX_ARGS 8

struct control_server;
struct control_req;

/*
 * A command handler. argv[0] is the command word, argv[1..argc-1] its
 * arguments (pointers valid only during the call). The handler either
 * replies now or keeps REQ and replies later from the loop thread
 * (control_req_send / control_req_error); either way it returns 0. It
 * returns -errno to have the server reply {"ok":false,"error":strerror}.
 */
typedef int (*control_fn)(struct control_req *req, int argc, char **argv,
			  void *arg);

struct control_cmd {
	const char *name;
	control_fn fn;
};

/*
 * Binds STATE/control.sock (mode 0600; a stale socket left by a dead
 * daemon is replaced; one that answers means another daemon runs there:
 * -EADDRINUSE) and serves the commands of CMDS (terminated by a NULL name)
 * on BASE. "ping" is built in ({"ok":true,"pid":N}). Returns 0 or -errno.
 */
int control_server_start(struct event_base *base, const char *state_dir,
			 const struct control_cmd *cmds, void *arg,
			 struct control_server **out);
/* How long a client may take to send its request line (default 5000 ms;
 * a deferred reply is not limited by it). */
void control_server_set_read_timeout(struct control_server *s, int ms);
/* Stops listening, closes idle client connections and removes the socket.
 * Requests kept by handlers stay valid until they are answered (the answer
 * then goes nowhere). Safe with NULL. */
void control_server_stop(struct control_server *s);

/* The buffer a reply is written into (e.g. with ctljson_begin/ctljson_end from
 * netsync/control/ctljson.h); it must hold one JSON object ending in "\n". */
struct evbuffer *control_req_out(struct control_req *req);
/* Sends the reply written to control_req_out(), closes, frees REQ. */
void control_req_send(struct control_req *req);
/* Replies {"ok":false,"error":TEXT}, closes, frees REQ. */
void control_req_error(struct control_req *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Client: connects to STATE/control.sock, sends REQUEST (without "\n"),
 * and waits up to timeout_ms for the reply line. Returns 0 and a malloc'd
 * NUL-terminated reply without the newline in *reply (caller frees), or
 * -ENOENT (no socket: no daemon uses this state directory), -ECONNREFUSED
 * (a stale socket: the daemon is gone), -ETIMEDOUT, -EPROTO (connection
 * closed without a reply), -ENAMETOOLONG (path too long for a socket).
 */
int control_call(const char *state_dir, const char *request, int timeout_ms,
		 char **reply);

/* Prints why the daemon of STATE could not be asked by CMD (rc from
 * control_call: "no daemon", "did not answer", ...) and returns the CLI
 * exit code: 69 no daemon, 75 timeout, else from the errno. */
int control_cmd_error(const char *cmd, const char *state, int rc);

#endif

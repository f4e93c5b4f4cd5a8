/*
 * notify — sends sd_notify datagrams to $NOTIFY_SOCKET. Stateless: each
 * call opens a socket, sends one datagram and closes it, so it is safe in
 * any thread and after fork. The daemon that is really ready sends READY=1
 * (after detaching, the child), which is why systemd's units run with -f
 * and NotifyAccess=main is enough.
 */
#include "common/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

bool notify_enabled(void)
{
	const char *p = getenv("NOTIFY_SOCKET");

	return p && *p;
}

int notify_send(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[1024];
	socklen_t salen;
	va_list ap;
	size_t n;
	int fd, rc = 0;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* abstract namespace */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	va_start(ap, fmt);
	n = (size_t)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= sizeof(msg))
		return -EMSGSIZE;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, n, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

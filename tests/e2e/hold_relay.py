#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1 that can hold one direction of a connection.

    hold_relay.py LISTEN_PORT TARGET_PORT HOLD_FILE

Forwards every connection made to LISTEN_PORT to TARGET_PORT, both ways.
While HOLD_FILE exists, a connection whose server has sent anything (the
HELLO reply) reads nothing more from its client: the client's socket
buffers fill and its writer stalls where the test wants it, mid-stream,
while the server's frames (heartbeats, acks) still reach it. Removing the
file lets the held bytes through. The relay's receive buffer is small, so
a held client can have little more than its own buffers in flight.
Runs until killed (the test tracks its pid).
"""
import os
import select
import socket
import sys
import threading

HOLD_POLL_S = 0.02
RCVBUF = 64 << 10


def pump(src, dst, conn, to_server, hold_file):
    try:
        while True:
            if to_server and conn["spoke"] and os.path.exists(hold_file):
                threading.Event().wait(HOLD_POLL_S)
                continue
            if not select.select([src], [], [], HOLD_POLL_S)[0]:
                continue
            if to_server and conn["spoke"] and os.path.exists(hold_file):
                continue    # the reply came while this thread waited
            buf = src.recv(RCVBUF)
            if not buf:
                break
            if not to_server:
                conn["spoke"] = True
            dst.sendall(buf)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    listen_port, target_port, hold_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # set before listen(): accepted sockets inherit it (no autotuning)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(8)
    while True:
        client, _ = ls.accept()
        try:
            server = socket.create_connection(("127.0.0.1", target_port), timeout=5)
        except OSError:
            client.close()
            continue
        server.settimeout(None)
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = {"spoke": False}
        for src, dst, up in ((client, server, True), (server, client, False)):
            threading.Thread(target=pump, args=(src, dst, conn, up, hold_file),
                             daemon=True).start()


if __name__ == "__main__":
    main()

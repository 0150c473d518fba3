"""The client of ``preloaded_cli``: ``python -I -S preloaded_cli_client.py SOCKET ARGS...`` runs
``autocomp-core ARGS...`` in a process forked by the server listening on SOCKET, with this
process's environment, working directory and standard streams, and ends as that command ended.
Standard library only, and nothing imported that a bare interpreter does not need: it starts in
milliseconds. Without a server it runs the command in a fresh interpreter instead."""

import json
import os
import signal
import socket
import sys
import time

#: how long a command waits for a server that is still importing
CONNECT_S = 60.0
#: the signals passed on to the command (those this process was not started ignoring)
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def fresh_interpreter(args):
    os.execv(sys.executable, [sys.executable, "-m", "autocomp_core.cli", *args])


def server_alive(path):
    """False once the server that was to listen at ``path`` has ended (or is a zombie)."""
    try:
        pid = int(open(os.path.join(os.path.dirname(path), "server.pid")).read())
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return False
    return state != "Z"


def connect(path):
    deadline = time.monotonic() + CONNECT_S
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            return conn
        except (FileNotFoundError, ConnectionRefusedError):
            conn.close()
            if time.monotonic() > deadline or not server_alive(path):
                return None
            time.sleep(0.02)


def main():
    path, args = sys.argv[1], sys.argv[2:]
    conn = connect(path)
    if conn is None:
        fresh_interpreter(args)
    # a signal this process was started ignoring (an interpreter keeps it ignored) the command
    # ignores too, and it is not passed on
    ignored = {int(s): signal.getsignal(s) == signal.SIG_IGN for s in FORWARDED}
    request = {"argv": args, "env": dict(os.environ), "cwd": os.getcwd(), "ignored": ignored}
    try:
        socket.send_fds(conn, [b"\0"], [0, 1, 2])
        conn.sendall(json.dumps(request).encode() + b"\n")
    except OSError:  # a standard stream closed, or the server gone: nothing ran yet
        fresh_interpreter(args)
    replies = conn.makefile("rb")
    pid = replies.readline()
    if not pid:  # the server could not start the command: nothing ran yet
        fresh_interpreter(args)

    def forward(signum, _frame):
        conn.sendall(f"{signum}\n".encode())

    for signum in FORWARDED:
        if not ignored[signum]:
            signal.signal(signum, forward)
    ended = replies.readline().split()
    if not ended:
        sys.stderr.write("autocomp-core (preloaded): the command's process was lost\n")
        os._exit(70)
    status = int(ended[1])
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        signal.signal(killed_by, signal.SIG_DFL)
        os.kill(os.getpid(), killed_by)
    os._exit(os.waitstatus_to_exitcode(status))


main()

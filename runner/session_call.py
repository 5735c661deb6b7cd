# One call of a boxer session (docs/reference.md, "Sessions"): hands this
# process's stdin, stdout and stderr to the session's driver, which runs
# /code/NAME with them, and exits with the call's status.
import os
import socket
import sys
import time

name, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
deadline = time.monotonic() + 10
while True:
    try:
        s.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.stderr.write("boxer: the session's interpreter is not running\n")
            os._exit(255)
        time.sleep(0.01)
socket.send_fds(s, [name.encode()], [0, 1, 2])
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(16)
    if not chunk:
        sys.stderr.write("boxer: the session's interpreter ended during the call\n")
        os._exit(255)
    data += chunk
os._exit(int(data))

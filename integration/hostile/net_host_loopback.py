# group: network
# tries: connect to a service on the host's 127.0.0.1
# expect: ECONNREFUSED
# flags: --env HOST_PORT={{HOST_PORT}}
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket, os
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", int(os.environ["HOST_PORT"]))); print("RESULT reached host", s.recv(64))
except OSError as e:
    print("RESULT", err(e))

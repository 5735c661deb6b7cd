# group: network
# tries: TCP connect to an outside address (TEST-NET-1, no route exists)
# expect: ENETUNREACH
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("192.0.2.1", 80)); print("RESULT connected")
except OSError as e:
    print("RESULT", err(e))

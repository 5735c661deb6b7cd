# group: network
# tries: TCP connect to an outside IPv6 address (2001:db8::/32)
# expect: ENETUNREACH
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
try:
    s = socket.socket(socket.AF_INET6)
    s.settimeout(3)
    s.connect(("2001:db8::1", 80)); print("RESULT connected")
except OSError as e:
    print("RESULT", err(e))

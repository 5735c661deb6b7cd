# group: network
# tries: open a raw IP socket (ICMP, spoofing)
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("RESULT opened")
except OSError as e:
    print("RESULT", err(e))

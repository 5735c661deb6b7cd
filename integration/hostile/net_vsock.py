# group: network
# tries: open an AF_VSOCK socket (host/guest channel)
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
try:
    socket.socket(40, socket.SOCK_STREAM); print("RESULT opened")
except OSError as e:
    print("RESULT", err(e))

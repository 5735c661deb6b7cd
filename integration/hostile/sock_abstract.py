# group: containerd
# tries: connect to an abstract unix socket of the host
# expect: ECONNREFUSED
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0/containerd-shim/boxer.sock"); print("RESULT connected")
except OSError as e:
    print("RESULT", err(e))

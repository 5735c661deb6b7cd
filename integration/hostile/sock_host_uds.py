# group: containerd
# tries: connect to the host's containerd socket by path
# expect: ENOENT
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/boxer/containerd.sock"); print("RESULT connected")
except OSError as e:
    print("RESULT", err(e))

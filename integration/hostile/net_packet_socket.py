# group: network
# tries: open an AF_PACKET socket (sniffing)
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("RESULT opened")
except OSError as e:
    print("RESULT", err(e))

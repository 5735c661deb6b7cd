# group: network
# tries: UDP datagram to an outside address
# expect: ENETUNREACH
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", ("192.0.2.1", 53)); print("RESULT sent")
except OSError as e:
    print("RESULT", err(e))

# The egress programs' helpers: a program whose header says "uses: net"
# runs with this file in front of it.
import errno, os, socket
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
def attempt(host, port, timeout=5):
    """Connect, send, read: what a refused connection comes to."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        s.sendall(b"GET / HTTP/1.0\r\nHost: web.test\r\n\r\n")
        data = s.recv(64)
        return "reached " + repr(data[:24]) if data else "refused"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        # The proxy resets what it refuses: the program sees a reset (or a
        # broken pipe, if it was still sending).
        return "refused" if e.errno in (errno.ECONNRESET, errno.EPIPE) else err(e)
    finally:
        s.close()
def resolve(name):
    try:
        return socket.gethostbyname(name)
    except socket.gaierror:
        return "NXDOMAIN"
def gateway():
    for line in open("/etc/resolv.conf"):
        if line.startswith("nameserver"):
            return line.split()[1]

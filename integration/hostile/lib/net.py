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
def tunnel(dest, timeout=5):
    """A socket through a CONNECT tunnel of boxer's proxy to dest (host:port)."""
    proxy = os.environ["HTTPS_PROXY"].split("//")[1]
    host, port = proxy.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (dest.encode(), dest.encode()))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        b = s.recv(1)
        if not b:
            raise OSError(errno.ECONNRESET, "the proxy closed the tunnel")
        head += b
    if head.split(b" ")[1] != b"200":
        raise OSError(errno.EACCES, head.decode())
    return s
def tls(s, server_name):
    """TLS over s naming server_name (None: no SNI), trusting anything."""
    import ssl
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    return ctx.wrap_socket(s, server_hostname=server_name)
def ask(s, host, f=None, method="GET", pause=0):
    """Send METHOD / for host (None: HTTP/1.0 without Host) on s, its first
    4 bytes apart for pause seconds if pause, and read the answer from f:
    the shared host's "site NAME", another status, or "refused" if the
    proxy cut the connection."""
    import time
    try:
        req = b"%s / HTTP/1.0\r\n\r\n" % method.encode() if host is None else b"%s / HTTP/1.1\r\nHost: %s\r\n\r\n" % (method.encode(), host.encode())
        if pause:
            s.sendall(req[:4])
            time.sleep(pause)
            req = req[4:]
        s.sendall(req)
        f = f or s.makefile("rb")
        line = f.readline()
        if not line:
            return "refused"
        status, length = line.split()[1].decode(), 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode().partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        body = f.read(length).decode()
        return body.split(" on ")[0] if status == "200" else status
    except OSError:
        return "refused"

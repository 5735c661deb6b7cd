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
def hello(server_name):
    """A TLS 1.2 ClientHello naming server_name (bytes, sent as they are:
    Python's ssl would turn a name into its IDNA form first)."""
    import struct
    def vec(data, n=2):
        return struct.pack(">I", len(data))[4 - n:] + data
    suites = bytes.fromhex("c02fc030c02bc02ccca8cca9009c002f")
    exts = b"".join(struct.pack(">H", t) + vec(d) for t, d in [
        (0x0000, vec(b"\x00" + vec(server_name))),
        (0x000a, vec(bytes.fromhex("001d0017"))),
        (0x000b, bytes.fromhex("0100")),
        (0x000d, vec(bytes.fromhex("040308040401050308050501080606010201"))),
    ])
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + vec(suites) + b"\x01\x00" + vec(exts)
    return b"\x16\x03\x01" + vec(b"\x01" + vec(body, 3))
def sslv2_hello():
    """A ClientHello in SSL 2's record format (OpenSSL's old SSLv23
    clients): it cannot name a server."""
    body = b"\x01\x03\x01" + bytes.fromhex("0009" "0000" "0010") + bytes.fromhex("00002f00003500000a") + os.urandom(16)
    return bytes([0x80, len(body)]) + body
def first_bytes(s, data):
    """Send data on s and say what came back: "reached" if the server
    answered anything, "refused" if the proxy cut the connection."""
    try:
        s.sendall(data)
        return "reached" if s.recv(5) else "refused"
    except socket.timeout:
        return "timeout"
    except OSError:
        return "refused"
    finally:
        s.close()
def raw_http(dest, request, timeout=5):
    """Send a raw request to boxer's proxy and return its status line's code."""
    proxy = os.environ["HTTP_PROXY"].split("//")[1]
    host, port = proxy.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(request)
        line = s.makefile("rb").readline()
        return line.split()[1].decode() if line else "refused"
    except OSError:
        return "refused"
    finally:
        s.close()

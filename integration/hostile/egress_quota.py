# group: egress
# tries: move more than --net-bytes (64KiB) through an allowed echo port
# expect: cut
# flags: --allow-host web.test:7000 --net-bytes 64k
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
s = socket.create_connection(("web.test", 7000), timeout=5)
sent = got = 0
try:
    for _ in range(64):
        s.sendall(b"x" * 4096); sent += 4096
        while got < sent:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionResetError()
            got += len(chunk)
    print("RESULT moved", sent + got)
except OSError:
    print("RESULT cut" if sent + got <= 2 * 64 * 1024 + 8192 else "RESULT cut late")

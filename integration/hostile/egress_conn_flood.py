# group: egress
# tries: hold 200 connections open at once to an allowed port (the cap is 64)
# expect: capped
# flags: --allow-host web.test:7000 --pids 256
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
import resource
conns, dead = [], 0
for i in range(200):
    try:
        s = socket.create_connection(("web.test", 7000), timeout=5)
        conns.append(s)
    except OSError:
        dead += 1
alive = 0
for s in conns:
    try:
        s.settimeout(5)
        s.sendall(b"p")
        alive += 1 if s.recv(1) == b"p" else 0
    except OSError:
        pass
print("RESULT", "capped" if alive <= 64 else "all %d served" % alive)

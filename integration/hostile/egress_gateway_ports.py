# group: egress
# tries: reach boxer's gateway on other ports (22, 80, a host service's)
# expect: refused refused refused
# flags: --allow-host web.test --env HOST_PORT={{HOST_PORT}}
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
def gateway():
    for line in open("/etc/resolv.conf"):
        if line.startswith("nameserver"):
            return line.split()[1]
gw = gateway()
print("RESULT", attempt(gw, 22), attempt(gw, 80), attempt(gw, int(os.environ["HOST_PORT"])))

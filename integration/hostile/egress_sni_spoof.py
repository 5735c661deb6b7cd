# group: egress
# tries: TLS to an address never resolved (other.test's) with an allowed SNI (web.test)
# expect: refused
# flags: --allow-host web.test
# uses: net
import ssl
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
try:
    s = ctx.wrap_socket(socket.create_connection(("203.0.113.11", 443), timeout=5), server_hostname="web.test")
    s.sendall(b"GET / HTTP/1.0\r\nHost: web.test\r\n\r\n")
    print("RESULT reached", s.recv(24))
except (ssl.SSLError, OSError) as e:
    print("RESULT refused")

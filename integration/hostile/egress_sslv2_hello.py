# group: egress
# tries: an SSLv2-format ClientHello, which names no server, to an allowed name's address (cdn.test's shared host) without the proxy and in a CONNECT tunnel
# expect: refused refused
# flags: --allow-host cdn.test
# uses: net
def direct():
    try:
        return first_bytes(socket.create_connection(("cdn.test", 443), timeout=5), sslv2_hello())
    except OSError:
        return "refused"
def in_tunnel():
    try:
        return first_bytes(tunnel("cdn.test:443"), sslv2_hello())
    except OSError:
        return "refused"
print("RESULT", direct(), in_tunnel())

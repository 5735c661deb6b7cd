# group: egress
# tries: plain HTTP to an allowed name's address (kiosk.web.test's) with a look-alike Host (Kiosk.web.test with U+212A, kİosk.web.test with U+0130), without the proxy, in its absolute form through it (which Go's client sends on as its IDNA form), and in a CONNECT tunnel to the allowed name
# expect: refused refused 403 refused
# flags: --allow-host kiosk.web.test:80
# uses: net
kelvin, dotted = "\u212Aiosk.web.test", "k\u0130osk.web.test"
def direct(host):
    return ask(socket.create_connection(("kiosk.web.test", 80), timeout=5), host)
def in_tunnel(host):
    try:
        return ask(tunnel("kiosk.web.test:80"), host)
    except OSError:
        return "refused"
absolute = raw_http("kiosk.web.test:80", b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (kelvin.encode(), kelvin.encode()))
print("RESULT", direct(kelvin), direct(dotted), absolute, in_tunnel(kelvin))

# group: egress
# tries: through the proxy, CONNECT to look-alikes of allowed names (pypİ.test with U+0130, Kiosk.web.test with U+212A), then TLS naming a look-alike in CONNECT tunnels to the allowed names
# expect: refused refused refused refused
# flags: --allow-host pypi.test --allow-host kiosk.web.test
# uses: net
def through(target, name):
    try:
        return first_bytes(tunnel(target), hello(name.encode()))
    except OSError:
        return "refused"
print("RESULT", through("pyp\u0130.test:443", "pypi.test"), through("\u212Aiosk.web.test:443", "kiosk.web.test"),
      through("pypi.test:443", "pyp\u0130.test"), through("kiosk.web.test:443", "\u212Aiosk.web.test"))

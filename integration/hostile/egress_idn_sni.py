# group: egress
# tries: without the proxy, TLS to allowed names' addresses (pypi.test's, kiosk.web.test's) naming look-alikes that Unicode lower-casing folds into them: pypİ.test (U+0130) and Kiosk.web.test (U+212A, the Kelvin sign)
# expect: refused refused
# flags: --allow-host pypi.test --allow-host kiosk.web.test
# uses: net
def try_sni(target, name):
    try:
        return first_bytes(socket.create_connection((target, 443), timeout=5), hello(name.encode()))
    except OSError:
        return "refused"
print("RESULT", try_sni("pypi.test", "pyp\u0130.test"), try_sni("kiosk.web.test", "\u212Aiosk.web.test"))

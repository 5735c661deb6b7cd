# group: egress
# tries: plain HTTP to an allowed name's address (cdn.test's) without the proxy, naming another site of it (Host: evil.test) or the address (Host: 203.0.113.15), then the address after a request for cdn.test on a kept-alive connection
# expect: refused refused site cdn.test 403
# flags: --allow-host cdn.test:80
# uses: net
def fresh():
    return socket.create_connection(("cdn.test", 80), timeout=5)
s = fresh()
f = s.makefile("rb")
print("RESULT", ask(fresh(), "evil.test"), ask(fresh(), "203.0.113.15"), ask(s, "cdn.test", f), ask(s, "203.0.113.15", f))

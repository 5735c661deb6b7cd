# group: egress
# tries: plain HTTP without a Host to an allowed name's address (cdn.test's) without the proxy, first on a connection of its own (HTTP/1.0), then after a request for cdn.test on a kept-alive one, reaching its default site
# expect: refused site cdn.test 403
# flags: --allow-host cdn.test:80
# uses: net
s = socket.create_connection(("cdn.test", 80), timeout=5)
f = s.makefile("rb")
print("RESULT", ask(socket.create_connection(("cdn.test", 80), timeout=5), None), ask(s, "cdn.test", f), ask(s, None, f))

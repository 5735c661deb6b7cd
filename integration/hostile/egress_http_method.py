# group: egress
# tries: plain HTTP to an allowed name's address (cdn.test's) without the proxy, with a method the proxy might not take for HTTP (PROPFIND), naming another site there (evil.test), at once and with its request line sent in two pieces
# expect: refused refused
# flags: --allow-host cdn.test:80
# uses: net
def fresh():
    return socket.create_connection(("cdn.test", 80), timeout=5)
print("RESULT", ask(fresh(), "evil.test", method="PROPFIND"), ask(fresh(), "evil.test", method="PROPFIND", pause=0.5))

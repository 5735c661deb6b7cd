# group: egress
# tries: connect to an allowed name's address (cdn.test's) without the proxy and speak TLS without a server name, reaching its default site
# expect: refused
# flags: --allow-host cdn.test
# uses: net
try:
    s = tls(socket.create_connection(("cdn.test", 443), timeout=5), None)
    print("RESULT", ask(s, None))
except OSError:
    print("RESULT refused")

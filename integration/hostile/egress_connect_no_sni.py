# group: egress
# tries: in a CONNECT tunnel to an allowed name (cdn.test), speak TLS without a server name, reaching its shared address's default site
# expect: refused
# flags: --allow-host cdn.test
# uses: net
try:
    s = tls(tunnel("cdn.test:443"), None)
    print("RESULT", ask(s, None))
except OSError:
    print("RESULT refused")

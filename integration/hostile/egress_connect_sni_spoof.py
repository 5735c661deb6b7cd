# group: egress
# tries: open a CONNECT tunnel to an allowed name (cdn.test) and speak TLS to another site of its shared address (evil.test) through it
# expect: refused
# flags: --allow-host cdn.test
# uses: net
try:
    s = tls(tunnel("cdn.test:443"), "evil.test")
    print("RESULT", ask(s, "evil.test"))
except OSError:
    print("RESULT refused")

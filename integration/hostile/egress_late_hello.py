# group: egress
# tries: connect to an allowed name's address (cdn.test's), outwait the proxy's wait for a name (10 s), then speak TLS to another site there (evil.test)
# expect: refused
# flags: --allow-host cdn.test
# uses: net
import time
try:
    raw = socket.create_connection(("cdn.test", 443), timeout=20)
    time.sleep(11)
    print("RESULT", ask(tls(raw, "evil.test"), "evil.test"))
except OSError:
    print("RESULT refused")

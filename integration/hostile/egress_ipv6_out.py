# group: egress
# tries: reach an IPv6 address (v6.test's 2001:db8::10) with egress on
# expect-runc: EADDRNOTAVAIL
# expect-runsc: ENETUNREACH
# flags: --allow-host v6.test:80
# uses: net
s = socket.socket(socket.AF_INET6)
s.settimeout(5)
try:
    s.connect(("2001:db8::10", 80)); print("RESULT connected")
except socket.timeout:
    print("RESULT timeout")
except OSError as e:
    print("RESULT", err(e))

# group: egress
# tries: send UDP to a host on the fake internet (not DNS), and DNS straight to the upstream resolver
# expect: ECONNREFUSED NXDOMAIN
# flags: --allow-host web.test
# uses: net
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(3)
u.connect(("203.0.113.10", 9999))
u.send(b"x")
try:
    u.recv(1); udp = "answered"
except socket.timeout:
    udp = "timeout"
except OSError as e:
    udp = err(e)
# A query for other.test sent to the upstream's own address meets boxer's
# resolver (all port 53 goes there): NXDOMAIN, never the upstream's answer.
q = bytes.fromhex("abcd01000001000000000000") + b"".join(bytes([len(p)]) + p.encode() for p in "other.test".split(".")) + b"\x00\x00\x01\x00\x01"
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
d.settimeout(3)
d.sendto(q, ("203.0.113.53", 53))
try:
    r = d.recv(512)
    dns = "NXDOMAIN" if r[3] & 0x0f == 3 else "answered"
except socket.timeout:
    dns = "timeout"
print("RESULT", udp, dns)

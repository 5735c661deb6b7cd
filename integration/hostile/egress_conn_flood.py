# group: egress
# tries: hold 200 connections open at once to an allowed port (the cap is 64)
# expect: capped
# flags: --allow-host web.test:7000 --pids 256
# uses: net
import resource
conns, dead = [], 0
for i in range(200):
    try:
        s = socket.create_connection(("web.test", 7000), timeout=5)
        conns.append(s)
    except OSError:
        dead += 1
alive = 0
for s in conns:
    try:
        s.settimeout(5)
        s.sendall(b"p")
        alive += 1 if s.recv(1) == b"p" else 0
    except OSError:
        pass
print("RESULT", "capped" if alive <= 64 else "all %d served" % alive)

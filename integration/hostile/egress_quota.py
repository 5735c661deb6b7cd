# group: egress
# tries: move more than --net-bytes (64KiB) through an allowed echo port
# expect: cut
# flags: --allow-host web.test:7000 --net-bytes 64k
# uses: net
s = socket.create_connection(("web.test", 7000), timeout=5)
sent = got = 0
try:
    for _ in range(64):
        s.sendall(b"x" * 4096); sent += 4096
        while got < sent:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionResetError()
            got += len(chunk)
    print("RESULT moved", sent + got)
except OSError:
    print("RESULT cut" if sent + got <= 2 * 64 * 1024 + 8192 else "RESULT cut late")

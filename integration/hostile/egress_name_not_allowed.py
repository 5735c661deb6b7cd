# group: egress
# tries: resolve a name off the allowlist (other.test), and ask the proxy for it with CONNECT
# expect: NXDOMAIN 403
# flags: --allow-host web.test
# uses: net
proxy = os.environ["HTTPS_PROXY"].split("//")[1]
host, port = proxy.rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
status = s.recv(64).split(b" ")[1].decode()
print("RESULT", resolve("other.test"), status)

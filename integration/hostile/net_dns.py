# group: network
# tries: resolve a public name
# expect: gaierror
import socket
try:
    socket.getaddrinfo("deb.debian.org", 80); print("RESULT resolved")
except OSError as e:
    print("RESULT", type(e).__name__)

# group: network
# tries: list network interfaces
# expect: lo
import socket
print("RESULT", ",".join(sorted(n for _, n in socket.if_nameindex())))

# group: egress
# tries: reach an allowed name that resolves to 127.0.0.1 (DNS rebinding)
# expect: NXDOMAIN
# flags: --allow-host loop.test:7000
import errno, os, socket
def resolve(name):
    try:
        return socket.gethostbyname(name)
    except socket.gaierror:
        return "NXDOMAIN"
print("RESULT", resolve("loop.test"))

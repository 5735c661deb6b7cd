# group: leaks
# tries: list kernel keys
# expect: empty
import os
p = "/proc/keys"
try:
    data = os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(4096)
    print("RESULT", "empty" if not data else "LEAK %d" % len(data))
except OSError:
    print("RESULT", "empty")

# group: leaks
# tries: read kernel symbol addresses
# expect: empty
import os
p = "/proc/kallsyms"
try:
    data = os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(4096)
    print("RESULT", "empty" if not data else "LEAK %d" % len(data))
except OSError:
    print("RESULT", "empty")

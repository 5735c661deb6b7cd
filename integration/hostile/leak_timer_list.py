# group: leaks
# tries: read the host's timers (host task names)
# expect: empty
import os
p = "/proc/timer_list"
try:
    data = os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(4096)
    print("RESULT", "empty" if not data else "LEAK %d" % len(data))
except OSError:
    print("RESULT", "empty")

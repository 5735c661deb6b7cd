# group: environment
# tries: read other processes' environments in /proc
# expect: clean
import os
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if b"leak-me" in open("/proc/%s/environ" % pid, "rb").read():
                found.append(pid)
        except OSError:
            pass
print("RESULT", "clean" if not found else "LEAK " + " ".join(found))

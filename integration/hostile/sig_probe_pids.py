# group: signals
# tries: signal 0 to every PID up to 4096 to find host processes
# expect: none
import os
found = []
for pid in range(2, 4097):
    try:
        os.kill(pid, 0); found.append(pid)
    except OSError:
        pass
print("RESULT", "none" if not found else "FOUND %d" % len(found))

# group: signals
# tries: signal 0 to every PID up to 4096 to find host processes
# expect: none
import os
found = []
# PID 1 is boxer-init, the program's parent; the program is its child.
for pid in range(2, 4097):
    if pid == os.getpid():
        continue
    try:
        os.kill(pid, 0); found.append(pid)
    except OSError:
        pass
print("RESULT", "none" if not found else "FOUND %d" % len(found))

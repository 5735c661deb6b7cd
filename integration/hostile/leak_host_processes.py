# group: leaks
# tries: list processes outside the sandbox
# expect: 0
import os
# Besides itself and its parent, boxer-init (PID 1).
print("RESULT", len([p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (os.getpid(), os.getppid())]))

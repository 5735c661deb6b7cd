# group: leaks
# tries: list processes outside the sandbox
# expect: 1
import os
print("RESULT", len([p for p in os.listdir("/proc") if p.isdigit()]))

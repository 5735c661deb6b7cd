# group: signals
# tries: kill(-1, SIGKILL): every process it can reach
# expect: status=killed
# The killer's parent, the program, is one of them, as on a host; boxer-init
# (PID 1, which kill(-1) spares) reports its death.
import os, signal, subprocess
child = subprocess.Popen(["python3", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"])
child.wait()
print("RESULT alive")

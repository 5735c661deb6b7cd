# group: signals
# tries: kill(-1, SIGKILL): every process it can reach
# expect: alive
import os, signal, subprocess
child = subprocess.Popen(["python3", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"])
child.wait()
print("RESULT alive")

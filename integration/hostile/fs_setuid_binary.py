# group: files
# tries: gain root through a setuid binary (mount)
# expect: refused
import subprocess
p = subprocess.run(["/bin/mount", "-t", "tmpfs", "none", "/tmp"], capture_output=True, text=True)
print("RESULT", "refused" if p.returncode != 0 else "mounted")

# group: files
# tries: walk /proc/1/root to the host's files
# expect: absent
import os
found = [p for p in ["/proc/1/root/run/boxer", "/proc/1/root/var/lib/boxer", "/proc/1/root/root/.bashrc", "/proc/1/root/etc/containerd"] if os.path.exists(p)]
print("RESULT", "absent" if not found else "FOUND " + " ".join(found))

# group: containerd
# tries: find the containerd, boxer and docker sockets
# expect: absent
import os
found = [p for p in ["/run/containerd/containerd.sock", "/run/boxer/containerd.sock", "/var/run/docker.sock", "/run/containerd/s", "/run/boxer"] if os.path.exists(p)]
print("RESULT", "absent" if not found else "FOUND " + " ".join(found))

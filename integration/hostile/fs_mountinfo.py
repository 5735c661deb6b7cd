# group: files
# tries: look in /proc/self/mountinfo for host mount points (containerd state, boxer dirs)
# expect: clean
points = [l.split()[4] for l in open("/proc/self/mountinfo")]
bad = [p for p in points if p.startswith(("/run/boxer", "/var/lib/boxer", "/run/containerd", "/var/lib/containerd", "/host", "/root"))]
print("RESULT", "clean" if not bad else "FOUND " + " ".join(bad))

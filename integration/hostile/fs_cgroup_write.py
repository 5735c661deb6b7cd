# group: files
# tries: write into /sys/fs/cgroup
# expect: EROFS
# flags: --user 0:0
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/sys/fs/cgroup/release_agent", "w").write("/evil"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

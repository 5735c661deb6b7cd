# group: files
# tries: write a kernel sysctl through /proc/sys
# expect: EROFS
# expect-runsc: EACCES
# flags: --user 0:0
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/proc/sys/kernel/core_pattern", "w").write("|/evil"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

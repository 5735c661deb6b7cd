# group: files
# tries: write /proc/sysrq-trigger
# expect: EROFS
# expect-runc: EROFS|ENOENT
# expect-runsc: EACCES
# flags: --user 0:0
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/proc/sysrq-trigger", "w").write("b"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

# group: files
# tries: as uid 0 (no capabilities), append to /etc/passwd
# expect: EROFS
# flags: --user 0:0
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/etc/passwd", "a").write("x"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

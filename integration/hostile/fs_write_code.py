# group: files
# tries: overwrite its own code in /code
# expect-runc: EACCES
# expect-runsc: EROFS
# flags: --user 0:0
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/code/main.py", "a"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

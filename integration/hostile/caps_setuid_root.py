# group: capabilities
# tries: setuid(0)
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import os
try:
    os.setuid(0); print("RESULT root")
except OSError as e:
    print("RESULT", err(e))

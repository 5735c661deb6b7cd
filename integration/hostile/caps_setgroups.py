# group: capabilities
# tries: join group 0 with setgroups
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import os
try:
    os.setgroups([0]); print("RESULT joined")
except OSError as e:
    print("RESULT", err(e))

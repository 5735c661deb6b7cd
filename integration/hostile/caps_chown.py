# group: capabilities
# tries: give a file to root
# expect: EPERM
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import os
open("/tmp/f", "w").close()
try:
    os.chown("/tmp/f", 0, 0); print("RESULT chowned")
except OSError as e:
    print("RESULT", err(e))

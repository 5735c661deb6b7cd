# group: bombs
# tries: file descriptor bomb
# expect: EMFILE
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import os
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("RESULT", err(e) if len(fds) < 2048 else "too many")

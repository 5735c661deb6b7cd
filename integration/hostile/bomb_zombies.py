# group: bombs
# tries: zombie swarm: children never reaped
# expect: EAGAIN
# flags: --pids 32 --timeout 20s
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
import os
try:
    while True:
        if os.fork() == 0:
            os._exit(0)
except OSError as e:
    print("RESULT", err(e))

# group: bombs
# tries: fill /workspace
# expect: ENOSPC
# flags: --tmp-size 8m
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    with open("/workspace/fill", "wb") as f:
        while True:
            f.write(b"x" * 65536); f.flush()
except OSError as e:
    print("RESULT", err(e))

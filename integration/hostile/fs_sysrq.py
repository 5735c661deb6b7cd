# group: files
# tries: write /proc/sysrq-trigger
# expect: EROFS
# expect-runc: EROFS|ENOENT
# expect-runsc: written
# flags: --user 0:0
# Under gVisor the file is the Sentry's own (an empty stand-in, writable by
# its root, since 2023) and runsc ignores the spec's read-only paths, so the
# write succeeds and reaches nothing: the host's sysrq is not behind it.
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/proc/sysrq-trigger", "w").write("b"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

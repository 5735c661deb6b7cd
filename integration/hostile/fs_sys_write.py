# group: files
# tries: write a sysfs knob (lo's MTU)
# expect: EROFS
# expect-runsc: ENOENT
# flags: --user 0:0
# gVisor's sysfs has no network class at all.
import errno
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
try:
    open("/sys/class/net/lo/mtu", "w").write("1"); print("RESULT written")
except OSError as e:
    print("RESULT", err(e))

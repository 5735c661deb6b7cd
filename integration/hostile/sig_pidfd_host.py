# group: signals
# tries: pidfd_open on a host PID (containerd's)
# expect: ESRCH
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
# A low PID that is neither the program nor boxer-init (PID 1).
print("RESULT", sc(434, 3 if os.getpid() == 2 else 2, 0))

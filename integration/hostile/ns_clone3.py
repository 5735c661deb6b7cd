# group: namespaces
# tries: clone3 with CLONE_NEWUSER (flags seccomp cannot see; under runsc gVisor makes the namespace in its own kernel)
# expect: ENOSYS
# expect-runsc: OK
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
import struct
args = ctypes.create_string_buffer(struct.pack("QQQQQQQQQQQ", 0x10000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))
ctypes.set_errno(0)
pid = libc.syscall(ctypes.c_long(435), args, ctypes.c_long(88))
if pid == 0:
    # The child (under runsc, in a user namespace of gVisor's): gone at once.
    import os
    os._exit(0)
if pid > 0:
    import os
    os.waitpid(pid, 0)
    print("RESULT OK")
else:
    print("RESULT", errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))

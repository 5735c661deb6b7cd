# group: capabilities
# tries: raise its capabilities with capset
# expect: EPERM
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
import struct
hdr = ctypes.create_string_buffer(struct.pack("Ii", 0x20080522, 0))
data = ctypes.create_string_buffer(struct.pack("IIIIII", 0xffffffff, 0xffffffff, 0, 0, 0, 0))
print("RESULT", sc(126, hdr, data))

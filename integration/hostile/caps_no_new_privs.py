# group: capabilities
# tries: check no_new_privs
# expect: 1
import ctypes
libc = ctypes.CDLL(None)
print("RESULT", libc.prctl(39, 0, 0, 0, 0))

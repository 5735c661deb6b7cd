# group: signals
# tries: SIGKILL another sandbox's program (a victim the test keeps running beside) by its host PID, with kill and a pidfd, then every PID up to 32768, then kill(-1)
# expect: ESRCH ESRCH none
# flags: --env VICTIM={{VICTIM_PID}}
# The victim is a runc sandbox of the same user (65534) that the test keeps
# running beside every hostile program; its PID is the host's. Whatever is
# reached dies, and the test sees it gone.
import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
def err(e):
    return errno.errorcode.get(e, str(e))
victim = int(os.environ["VICTIM"])
try:
    os.kill(victim, signal.SIGKILL); direct = "OK"
except OSError as e:
    direct = err(e.errno)
ctypes.set_errno(0)
fd = libc.syscall(ctypes.c_long(434), ctypes.c_long(victim), ctypes.c_long(0))  # pidfd_open
if fd < 0:
    pidfd = err(ctypes.get_errno())
elif libc.syscall(ctypes.c_long(424), ctypes.c_long(fd), ctypes.c_long(signal.SIGKILL), None, ctypes.c_long(0)) < 0:  # pidfd_send_signal
    pidfd = err(ctypes.get_errno())
else:
    pidfd = "OK"
# PID 1 is boxer-init, the program's parent; the program is its child.
reached = 0
for pid in sorted(set(range(2, 32769)) | {victim}):
    if pid == os.getpid():
        continue
    try:
        os.kill(pid, signal.SIGKILL); reached += 1
    except OSError:
        pass
print("RESULT", direct, pidfd, "none" if not reached else "REACHED %d" % reached, flush=True)
# Last, everything it may signal: itself among them, as on a host.
os.kill(-1, signal.SIGKILL)

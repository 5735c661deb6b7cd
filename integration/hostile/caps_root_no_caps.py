# group: capabilities
# tries: as uid 0 without CAP_SETUID, become another user
# expect: EPERM
# flags: --user 0:0
import errno, os
try:
    os.setuid(1000); print("RESULT switched")
except OSError as e:
    print("RESULT", errno.errorcode[e.errno])

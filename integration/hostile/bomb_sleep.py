# group: bombs
# tries: sleep past the timeout
# expect: status=timeout
# flags: --timeout 1s
import time
time.sleep(3600)

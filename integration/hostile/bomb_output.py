# group: bombs
# tries: print 100 MiB
# expect: status=exited+truncated
import sys
chunk = b"z" * (1 << 20)
for _ in range(100):
    sys.stdout.buffer.write(chunk)

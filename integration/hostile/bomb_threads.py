# group: bombs
# tries: thread bomb
# expect: limited
# flags: --pids 32 --timeout 20s
import threading, time
n = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); n += 1
except RuntimeError:
    print("RESULT", "limited" if n < 64 else "too many: %d" % n)

# group: bombs
# tries: memory bomb
# expect: status=oom
# flags: --memory 64m
x = []
while True:
    x.append(bytearray(1 << 20))

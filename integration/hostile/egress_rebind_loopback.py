# group: egress
# tries: reach an allowed name that resolves to 127.0.0.1 (DNS rebinding)
# expect: NXDOMAIN
# flags: --allow-host loop.test:7000
# uses: net
print("RESULT", resolve("loop.test"))

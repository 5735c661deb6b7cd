# group: egress
# tries: reach an allowed name that resolves to 10.0.0.5 (RFC 1918), and the address itself
# expect: NXDOMAIN refused
# flags: --allow-host private.test:7000
# uses: net
print("RESULT", resolve("private.test"), attempt("10.0.0.5", 7000))

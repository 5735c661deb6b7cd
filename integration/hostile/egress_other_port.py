# group: egress
# tries: reach an allowed name (web.test, port 443 only) on port 80
# expect: refused
# flags: --allow-host web.test
# uses: net
resolve("web.test")
print("RESULT", attempt("web.test", 80))

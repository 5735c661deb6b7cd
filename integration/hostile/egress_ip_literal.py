# group: egress
# tries: reach an address never resolved for an allowed name (other.test's 203.0.113.11), by IP
# expect: refused
# flags: --allow-host web.test
# uses: net
print("RESULT", attempt("203.0.113.11", 443))

# group: egress
# tries: in a CONNECT tunnel to an allowed name (cdn.test:80), ask for it, then for another site of its shared address (evil.test) on the same tunnel
# expect: site cdn.test 403
# flags: --allow-host cdn.test:80
# uses: net
s = tunnel("cdn.test:80")
f = s.makefile("rb")
print("RESULT", ask(s, "cdn.test", f), ask(s, "evil.test", f))

# group: egress
# tries: reach boxer's gateway on other ports (22, 80, a host service's)
# expect: refused refused refused
# flags: --allow-host web.test --env HOST_PORT={{HOST_PORT}}
# uses: net
gw = gateway()
print("RESULT", attempt(gw, 22), attempt(gw, 80), attempt(gw, int(os.environ["HOST_PORT"])))

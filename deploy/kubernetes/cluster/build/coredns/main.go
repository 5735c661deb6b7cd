// Command coredns is CoreDNS trimmed to the plugins a test cluster's DNS
// uses (the Corefile of deploy/kubernetes/cluster): building all of
// CoreDNS's plugins costs a minute more of two cores for nothing used.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins above in CoreDNS's own order (core/dnsserver/zdirectives.go).
func init() {
	dnsserver.Directives = []string{"ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}

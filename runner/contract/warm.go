package contract

// The request a warm entry of the operator's (a pool's, the ready
// sessions') stands for.

import "strings"

// WarmRequest is the request a warm entry's sandboxes are shaped for:
// LANG[:RUNTIME][:net]. A ":net" sandbox has a link; the operator's
// allowlist stands in for the request's until its own is delivered.
func WarmRequest(entry string, max Maxima) (Request, error) {
	parts := strings.Split(entry, ":")
	req := Request{Lang: parts[0]}
	for _, p := range parts[1:] {
		switch {
		case p == "net":
			if len(max.AllowHosts) == 0 {
				return req, FieldErr(FieldAllowHosts, "is empty: warm entry %q needs the operator's --allow-host", entry)
			}
			req.AllowHosts = max.AllowHosts
		case req.Runtime == "":
			req.Runtime = p
		default:
			return req, FieldErr(FieldLang, "warm entry %q must be LANG[:RUNTIME][:net]", entry)
		}
	}
	return req.NormalizeWithin(max)
}

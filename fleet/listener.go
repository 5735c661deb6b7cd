package fleet

import (
	"context"
	"net/http"
	"net/netip"
)

// forwardedKey marks a request's context as one that came in on the fleet
// listener.
type forwardedKey struct{}

// Forwarded reports whether r came from another member, on the fleet
// listener. A request that did is answered where it lands, never
// forwarded again: no loops. Nothing a caller sends on a public listener
// makes it so.
func Forwarded(r *http.Request) bool {
	v, _ := r.Context().Value(forwardedKey{}).(bool)
	return v
}

// Handler answers the fleet listener, which ServerTLS lets only members
// reach: ProbePath, and requests other members forwarded, to api or e2b
// (nil without an E2B listener) by the plane the forwarding member named.
// The caller address it named becomes the request's RemoteAddr.
func (f *Fleet) Handler(api, e2b http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The listener's TLS has checked the key; this is the check
		// that it was there at all.
		if r.TLS == nil || f.id.verify(*r.TLS) != nil {
			http.Error(w, "the fleet listener answers only the fleet's members", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == ProbePath {
			f.serveProbe(w, r)
			return
		}
		plane := Plane(r.Header.Get(headerPlane))
		if ap, err := netip.ParseAddrPort(r.Header.Get(headerClient)); err == nil {
			r.RemoteAddr = ap.String()
		}
		r.Header.Del(headerPlane)
		r.Header.Del(headerClient)
		r = r.WithContext(context.WithValue(r.Context(), forwardedKey{}, true))
		switch {
		case plane == PlaneAPI:
			api.ServeHTTP(w, r)
		case plane == PlaneE2B && e2b != nil:
			e2b.ServeHTTP(w, r)
		case plane == PlaneE2B:
			http.Error(w, "this member has no E2B listener", http.StatusNotFound)
		default:
			http.Error(w, "the plane "+headerPlane+" names must be api or e2b", http.StatusBadRequest)
		}
	})
}

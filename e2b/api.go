package e2b

import "net/http"

// controlPlane serves E2B's control plane: sandboxes made, listed, killed,
// timed, paused and resumed, authenticated by X-API-KEY.
func (s *Server) controlPlane() http.Handler {
	return http.NotFoundHandler()
}

package e2b

import "net/http"

// interpreterHandler serves the code interpreter (port 49999): /execute
// and /contexts on the sandbox's python interpreter.
func (s *Server) interpreterHandler() http.Handler {
	return http.NotFoundHandler()
}

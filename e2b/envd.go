package e2b

import "net/http"

// envdHandler serves envd: the Connect-RPC process and filesystem services
// and the HTTP /files and /health, on the sandbox sandboxFrom names.
func (s *Server) envdHandler() http.Handler {
	return http.NotFoundHandler()
}

package agentos

import (
	"net/http"
	"slices"
)

// corsMethods are offered on preflights when the request names none.
const corsMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD"

// cors implements AgentOS's CORS policy: listed origins (or "*") are echoed
// back with credentials allowed; preflights get every method and the requested
// headers and are answered here, before authentication.
func cors(origins []string) func(http.Handler) http.Handler {
	anyOrigin := slices.Contains(origins, "*")
	allowed := func(o string) bool { return anyOrigin || slices.Contains(origins, o) }
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
			if origin == "" {
				next.ServeHTTP(w, r)
				return
			}
			if !allowed(origin) {
				if preflight {
					writeError(w, http.StatusBadRequest, "Disallowed CORS origin")
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			if !preflight {
				h.Set("Access-Control-Expose-Headers", RequestIDHeader)
				next.ServeHTTP(w, r)
				return
			}
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			if reqHeaders := r.Header.Get("Access-Control-Request-Headers"); reqHeaders != "" {
				h.Set("Access-Control-Allow-Headers", reqHeaders)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusOK)
		})
	}
}

package api

import (
	"net/http"
	"strings"
)

// CORS lets browsers on the given origins call the API ("*": any origin).
// Responses carry Access-Control-Allow-Origin for allowed origins and expose
// the rate-limit and request-id headers; preflights are answered here with
// 204 (without allow headers for an origin that is not allowed, which the
// browser then refuses). No credentials are allowed: keys travel in a header.
// An empty list disables CORS.
func CORS(origins []string) func(http.Handler) http.Handler {
	anyOrigin := false
	allowed := map[string]bool{}
	for _, o := range origins {
		o = strings.TrimRight(strings.ToLower(strings.TrimSpace(o)), "/")
		if o == "*" {
			anyOrigin = true
		} else if o != "" {
			allowed[o] = true
		}
	}
	return func(next http.Handler) http.Handler {
		if !anyOrigin && len(allowed) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			ok := anyOrigin || allowed[strings.ToLower(origin)]
			if ok {
				if anyOrigin {
					h.Set("Access-Control-Allow-Origin", "*")
				} else {
					h.Set("Access-Control-Allow-Origin", origin)
				}
				h.Set("Access-Control-Expose-Headers", "Ratelimit-Limit, Ratelimit-Remaining, Ratelimit-Reset, Retry-After, X-Request-Id")
			}
			if !anyOrigin {
				h.Add("Vary", "Origin")
			}
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				if ok {
					h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
					h.Set("Access-Control-Allow-Headers", "Content-Type, X-Data-Api-Key, X-Glacier-Api-Key")
					h.Set("Access-Control-Max-Age", "600")
				}
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Package web is the node's dashboard: one page, a style sheet and a script, embedded in the
// binary and served by the node's local API at /. The script polls the API's /status,
// /peers and /ledger every two seconds and draws what they say; it needs nothing else, from
// this machine or the internet. The files under assets/ are the sources: there is no build
// step.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// csp lets the page load its own files and talk to its own origin, nothing else: no inline
// script, no other site.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the dashboard at / and its files by name; any other path is not found.
// It is safe for concurrent use.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // a constant, valid directory name: cannot happen
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

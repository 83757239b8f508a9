package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Status is the JSON body of GET /status.
type Status struct {
	PeerID         string   `json:"peer_id"`
	Role           string   `json:"role"`
	Network        string   `json:"network"`
	Run            string   `json:"run"`
	Addresses      []string `json:"addresses"`
	ConnectedPeers int      `json:"connected_peers"`
	DHTTableSize   int      `json:"dht_table_size"`
	Topics         []string `json:"topics"`
	UptimeSeconds  float64  `json:"uptime_s"`
	Version        string   `json:"version"`
	// Training is the node's training progress; absent on a bootstrap node.
	Training *TrainingStatus `json:"training,omitempty"`
	// Agreement is where the node stands against the canonical rounds; absent on a
	// bootstrap node.
	Agreement *AgreementStatus `json:"agreement,omitempty"`
	// Join is how the node joined a run already under way; absent when it did not.
	Join *JoinStatus `json:"join,omitempty"`
}

// Peer is one entry of GET /peers.
type Peer struct {
	ID        string   `json:"id"`
	Addresses []string `json:"addresses"`
	LatencyMS float64  `json:"latency_ms"` // smoothed round-trip time; 0 until measured
}

// source is what the API reads. Its methods must be safe for concurrent use.
type source interface {
	Status() Status
	Peers() []Peer
}

// apiServer is the local HTTP API: JSON status and Prometheus metrics.
type apiServer struct {
	srv *http.Server
	ln  net.Listener
	err chan error
}

// startAPI listens on addr (host:port; port 0 picks a free one) and serves src and reg.
// Extra handlers (path -> handler) are mounted as given.
func startAPI(addr string, src source, reg *prometheus.Registry, extra map[string]http.Handler) (*apiServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("local API on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, src.Status()) })
	mux.HandleFunc("GET /peers", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, src.Peers()) })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	for path, h := range extra {
		mux.Handle("GET "+path, h)
	}
	s := &apiServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:  ln,
		err: make(chan error, 1),
	}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the API listens on.
func (s *apiServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to the context's deadline for requests in flight.
func (s *apiServer) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to do
}

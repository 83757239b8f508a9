package doctor

import "github.com/lowband/lowband/node"

// Running is what this home's running node reported through its local API.
type Running struct {
	Status  node.Status
	APIAddr string // host:port from api.addr
	// Metrics is the text of GET /metrics; empty when it could not be read.
	Metrics string
}

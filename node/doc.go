// Package node wires lowband together: it loads a home directory, starts the libp2p host
// (package p2p), serves the local HTTP API, and turns the decisions of the pure packages
// (training, verify, incentives) into gossip sends and disk writes.
//
// A node is started with New and stopped by cancelling the context given to Run; Run
// returns after every goroutine it started has finished and every resource is closed.
package node

// Package core holds the node's decisions as pure code: events and times in, decisions out.
// It does no I/O, reads no clock and starts no goroutine; the node's round loop (not built
// yet) calls it and does the I/O at the edges.
//
// So far it decides when a round may close (Deadline): on a quorum of stake plus an
// adaptive deadline, median + k·MAD of the arrival delays this node observed, bounded by
// the network spec's minimum and maximum, and in any case at the maximum, so a slow or
// silent peer never holds a round past it.
package core

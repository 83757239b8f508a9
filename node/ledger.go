package node

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/store"
)

// storeOpenTimeout is how long opening the store waits for another process's lock.
const storeOpenTimeout = time.Second

// ledger owns the node's store and serves the current ledger state. The state pointer is
// swapped whole on each committed round, so readers never see a half-applied one.
type ledger struct {
	st    *store.Store
	state atomic.Pointer[incentives.State]
	names sync.Map // peer.ID -> its base58 string: gossipsub asks appScore for every peer at every score
	nameN atomic.Int64
}

// maxNames bounds the peer names appScore keeps (past it they are all dropped at once).
const maxNames = 1 << 14

// openLedger opens (or creates) the store in the home directory and checks that it belongs
// to this network's genesis.
func openLedger(h configs.Home, spec *configs.Spec) (*ledger, error) {
	genesis, err := store.GenesisFromSpec(spec.Incentives)
	if err != nil {
		return nil, fmt.Errorf("network spec: %w", err)
	}
	st, err := store.Open(h.StorePath(), storeOpenTimeout)
	if err != nil {
		return nil, fmt.Errorf("opening the ledger store: %w", err)
	}
	if err := st.Init(genesis); err != nil {
		st.Close()
		return nil, fmt.Errorf("ledger store %s: %w", h.StorePath(), err)
	}
	cur, err := st.State()
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	l := &ledger{st: st}
	l.state.Store(cur)
	return l, nil
}

// appScore is the gossipsub application score of a peer: negative for jailed or slashed peers.
func (l *ledger) appScore(id peer.ID) float64 { return l.state.Load().AppScore(l.name(id)) }

// name is id's string, kept: encoding it costs more than the score's lookup (in a swarm of
// 100, gossipsub's scores spent 5% of the process's CPU on base58).
func (l *ledger) name(id peer.ID) string {
	if s, ok := l.names.Load(id); ok {
		return s.(string)
	}
	s := id.String()
	if l.nameN.Add(1) > maxNames {
		l.names.Clear()
		l.nameN.Store(1)
	}
	l.names.Store(id, s)
	return s
}

func (l *ledger) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.state.Load().Table()) })
}

func (l *ledger) close() error { return l.st.Close() }

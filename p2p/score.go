package p2p

import (
	"maps"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Score thresholds. A fresh peer scores 0; only a negative application score or
// misbehaviour moves a peer below them. An application score of -1000 stops
// gossip with the peer and -4000 graylists it.
var scoreThresholds = pubsub.PeerScoreThresholds{
	GossipThreshold:             -500,
	PublishThreshold:            -1000,
	GraylistThreshold:           -4000,
	AcceptPXThreshold:           bootstrapScore, // peer exchange from bootstrap peers in good standing only
	OpportunisticGraftThreshold: 0,
}

// bootstrapScore is the application score the host's bootstrap peers (Config.Bootstrap)
// get on top of Config.AppScore: enough to reach AcceptPXThreshold, so gossipsub takes
// the peers their PRUNEs name, while a fresh peer (0) or a penalised bootstrap peer
// (any negative application score) stays below it and its peer exchange is ignored.
const bootstrapScore = 10

// Invalid deliveries (gossipsub's P4): a message a validator Rejects costs the peer that
// delivered it. The penalty is the weight times the square of the decaying count, so a
// handful of rejected messages takes a peer below the publish threshold and about seven
// graylist it; the count decays by 1% a second (halving in about 70 s). Validators Reject
// only what no honest node forwards (it would have rejected it first, deterministically), so
// an honest peer never pays it.
const (
	invalidDeliveryWeight = -100
	invalidDeliveryDecay  = 0.99
)

// scoreInspectInterval is how often gossipsub reports its peer scores to the host.
const scoreInspectInterval = time.Second

func (h *Host) scoreParams() *pubsub.PeerScoreParams {
	p := &pubsub.PeerScoreParams{
		AppSpecificScore:          h.appScoreOf,
		AppSpecificWeight:         1,
		BehaviourPenaltyWeight:    -10,
		BehaviourPenaltyThreshold: 6,
		BehaviourPenaltyDecay:     0.9,
		DecayInterval:             time.Second,
		DecayToZero:               0.01,
		RetainScore:               10 * time.Minute,
		Topics:                    make(map[string]*pubsub.TopicScoreParams, len(h.cfg.Topics)),
	}
	for _, kind := range h.cfg.Topics {
		p.Topics[TopicName(h.cfg.Network, h.cfg.Run, kind)] = &pubsub.TopicScoreParams{
			SkipAtomicValidation: true, // only P4 is used; the rest stay off
			TopicWeight:          1,
			// P1 is off (weight 0), but gossipsub divides by its quantum for any peer in
			// the mesh: it must not be 0.
			TimeInMeshQuantum:              time.Second,
			InvalidMessageDeliveriesWeight: invalidDeliveryWeight,
			InvalidMessageDeliveriesDecay:  invalidDeliveryDecay,
		}
	}
	if h.cfg.ColocationPenalty {
		p.IPColocationFactorWeight = -50
		p.IPColocationFactorThreshold = 5
	}
	return p
}

// scoreBoard holds gossipsub's latest peer scores, as its inspector reports them.
type scoreBoard struct {
	mu     sync.Mutex
	scores map[peer.ID]float64
}

func (b *scoreBoard) inspect(scores map[peer.ID]float64) {
	b.mu.Lock()
	b.scores = maps.Clone(scores)
	b.mu.Unlock()
}

// GossipScore is gossipsub's score of a connected peer as of its last report (about once
// a second), and false for a peer it has no score for.
func (h *Host) GossipScore(p peer.ID) (float64, bool) {
	h.scores.mu.Lock()
	defer h.scores.mu.Unlock()
	s, ok := h.scores.scores[p]
	return s, ok
}

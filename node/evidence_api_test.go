package node

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/store"
)

// slashedLedger is a ledger whose store holds two rounds: in round 1 peer P1 is slashed for
// equivocating in round 0. It returns the ledger and the evidence.
func slashedLedger(t *testing.T) (*ledger, *incentives.Evidence) {
	t.Helper()
	fx := incentivestest.New("testnet", "run-1")
	g, err := store.GenesisFromSpec(configs.IncentivesSpec{
		Stakes:   map[string]uint64{incentivestest.PeerID("P1"): 1000, incentivestest.PeerID("P2"): 1000},
		MinStake: 100, Reward: 10, JailRounds: 2, UnstakedWeight: 0.25, EvidenceWindow: 3,
		Penalties: configs.PenaltySpec{Equivocation: 50, InvalidAttestation: 70, InvalidContent: 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Init(g); err != nil {
		t.Fatal(err)
	}
	ev := fx.Equivocation("P1", 0, 0, "x")
	for r, es := range [][]incentives.Evidence{nil, {*ev}} {
		cur, err := st.State()
		if err != nil {
			t.Fatal(err)
		}
		cl, err := cur.Build([]incentives.Contribution{fx.Contribution("P2", uint64(r), 1)}, es, []byte("model"), fx.Checker())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(cl.Record, cl.State, cl.Events); err != nil {
			t.Fatal(err)
		}
	}
	l := &ledger{st: st}
	cur, err := st.State()
	if err != nil {
		t.Fatal(err)
	}
	l.state.Store(cur)
	return l, ev
}

// TestEvidenceAPIListsSlashesAndDecodesEvidence: GET /evidence lists each penalty the
// ledger applied with the ID of its evidence, and GET /evidence/{id} says what that
// evidence proves: its kind, the peer, the round and the two shards signed for one slot.
// An unknown ID is not found, a malformed one a bad request.
func TestEvidenceAPIListsSlashesAndDecodesEvidence(t *testing.T) {
	l, ev := slashedLedger(t)
	mux := http.NewServeMux()
	for path, h := range l.evidenceHandlers() {
		mux.Handle("GET "+path, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var slashes []Slash
	getJSON(t, srv.URL+"/evidence", &slashes)
	id := ev.ID().String()
	p1 := incentivestest.PeerID("P1")
	if len(slashes) != 1 || slashes[0].Peer != p1 || slashes[0].Evidence != id || slashes[0].Round != 1 ||
		slashes[0].Amount != 50 || slashes[0].Kind != "equivocation" {
		t.Fatalf("GET /evidence: %+v, want P1 slashed 50 in round 1 by %s", slashes, id)
	}
	var view EvidenceView
	getJSON(t, srv.URL+"/evidence/"+id, &view)
	if view.ID != id || view.Kind != "equivocation" || view.Peer != p1 || view.Round != 0 || len(view.Shards) != 2 ||
		view.Shards[0].PayloadCID == view.Shards[1].PayloadCID || !strings.Contains(view.Proves, "two different shards") ||
		view.Penalty == nil || view.Penalty.Round != 1 {
		t.Fatalf("GET /evidence/%s: %+v", id, view)
	}
	for path, code := range map[string]int{
		"/evidence/" + strings.Repeat("0", 64): http.StatusNotFound,
		"/evidence/not-an-id":                  http.StatusBadRequest,
		"/evidence/" + strings.Repeat("0", 66): http.StatusBadRequest,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, code)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal(get(t, url), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

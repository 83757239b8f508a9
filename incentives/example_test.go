package incentives_test

import (
	"fmt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// A node closes a round with Build; any other node (or an auditor replaying records)
// applies the same record with Apply and reaches the same root.
func Example() {
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	params := incentives.Params{MinStake: 100, Reward: 10, JailRounds: 1, UnstakedWeightPPM: 500_000, EvidenceWindow: 2}
	params.Penalties[incentives.KindEquivocation] = 40
	genesis := incentives.Genesis{Stakes: []incentives.Stake{{Peer: pid("alice"), Amount: 500}, {Peer: pid("bob"), Amount: 500}}}
	st, err := incentives.NewState(params, genesis)
	if err != nil {
		panic(err)
	}
	contribs := []incentives.Contribution{fx.Contribution(pid("alice"), 0, 2), fx.Contribution(pid("carol"), 0, 1)}
	evidence := []incentives.Evidence{*fx.Equivocation(pid("bob"), 0, 0, "x")}
	closed, err := st.Build(contribs, evidence, []byte("model root"), chk)
	if err != nil {
		panic(err)
	}
	other, _, err := st.Apply(closed.Record, chk)
	if err != nil {
		panic(err)
	}
	fmt.Println("same root:", other.Root() == closed.State.Root())
	for _, p := range []string{"alice", "bob", "carol"} {
		next := closed.State
		id := pid(p)
		fmt.Printf("%s: stake %d balance %d jailed %v score %g\n", p, next.Stake(id), next.Balance(id), next.Jailed(id), next.AppScore(id))
	}
	// Output:
	// same root: true
	// alice: stake 500 balance 10 jailed false score 0
	// bob: stake 460 balance 0 jailed true score -100
	// carol: stake 0 balance 5 jailed false score 0
}

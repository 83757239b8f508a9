package incentives_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// A contribution the record marks Dropped earns nothing (EventFiltered) and counts as no
// contribution, while the others earn as before; the flag is part of the record's bytes
// and of the ledger root, so a record that moves it is another record with another root.
func TestDroppedContributionEarnsNothing(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	st := genesis(t)
	a, b, d := pid("A"), pid("B"), pid("D")
	cs := []incentives.Contribution{fx.Contribution("A", 0, 1), fx.Contribution("B", 0, 1), fx.Contribution("D", 0, 2)}
	plain, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	cs[1].Dropped = true
	cl, err := st.Build(slices.Clone(cs), nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	next := cl.State
	if next.Balance(b) != 0 || next.Account(b).Contributions != 0 {
		t.Fatalf("dropped contribution earned: balance %d, %d contributions", next.Balance(b), next.Account(b).Contributions)
	}
	if next.Balance(a) != 10 || next.Balance(d) != 3 || next.Account(a).Contributions != 1 {
		t.Fatalf("the others: A %d, D %d; want 10 and 3", next.Balance(a), next.Balance(d))
	}
	var kinds []incentives.EventKind
	for _, e := range cl.Events {
		if e.Peer == b {
			kinds = append(kinds, e.Kind)
		}
	}
	if !slices.Equal(kinds, []incentives.EventKind{incentives.EventFiltered}) || incentives.EventFiltered.String() != "filtered" {
		t.Fatalf("B's events %v", kinds)
	}
	ib := slices.IndexFunc(cl.Record.Contributions, func(c incentives.Contribution) bool { return c.Peer == b })
	io := (ib + 1) % 3 // another contribution
	if !cl.Record.Contributions[ib].Dropped || bytes.Equal(cl.Record.NewRoot, plain.Record.NewRoot) {
		t.Fatal("the flag is not in the record, or the root does not depend on it")
	}

	// The flag survives encoding; a record with it moved does not apply under the root.
	dec, err := incentives.DecodeRecord(cl.Record.Marshal())
	if err != nil || !dec.Contributions[ib].Dropped {
		t.Fatalf("decoded: %v", err)
	}
	if _, _, err := st.Apply(dec, fx.Checker()); err != nil {
		t.Fatal(err)
	}
	moved := *dec
	moved.Contributions = slices.Clone(dec.Contributions)
	moved.Contributions[ib].Dropped, moved.Contributions[io].Dropped = false, true
	if _, _, err := st.Apply(&moved, fx.Checker()); !errors.Is(err, incentives.ErrRootMismatch) {
		t.Fatalf("a record whose flags moved under the same root applied: %v", err)
	}

	// Without any flag the record encodes as it did before the field existed: no key 3.
	if bytes.Contains(plain.Record.Marshal(), []byte{0xa3, 0x01}) {
		t.Fatal("an unflagged contribution encodes a third field")
	}
}

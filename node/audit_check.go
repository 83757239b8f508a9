package node

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/lowband/lowband/incentives"
)

// signature checks the node's signed record of round r, where one is kept: it decodes, is
// of this network and run, its signature verifies, and it wraps exactly rec.
func (a *auditor) signature(r uint64, rec *incentives.Record) (string, error) {
	data, err := a.src.Signed(r)
	if err != nil {
		return "", err
	}
	if data == nil {
		return "none kept", nil
	}
	sr, inner, err := incentives.DecodeSignedRecord(data)
	if err != nil {
		return "", fmt.Errorf("signed record: %w", err)
	}
	switch {
	case sr.Network != a.spec.NetworkID() || sr.Run != a.spec.Run:
		return "", fmt.Errorf("signed record: of %s/%s", sr.Network, sr.Run)
	case inner.Round != r || !bytes.Equal(sr.Record, rec.Marshal()):
		return "", fmt.Errorf("signed record: it is not the stored record")
	}
	if err := sr.Verify(); err != nil {
		return "", fmt.Errorf("signed record of %s: %w", sr.Signer, err)
	}
	return "ok", nil
}

// closeModel closes rec's round again from the model state and its stored shards (the
// replay a restart runs) when the model state is known and every listed shard is stored;
// otherwise the model state is unknown until a checkpoint gives it back.
func (a *auditor) closeModel(rec *incentives.Record) (checked, note string, err error) {
	if a.model == nil {
		return CheckedLedger, "no model state since a round without its shards", nil
	}
	listed := 0
	for _, c := range rec.Contributions {
		listed += len(c.Shards)
	}
	stored, err := a.src.Shards(rec.Round)
	if err != nil {
		return "", "", err
	}
	if len(stored) < listed {
		a.model = nil
		return CheckedLedger, fmt.Sprintf("%d of %d shards stored", len(stored), listed), nil
	}
	next, _, err := a.rp.replayOne(a.src, *a.model, a.led, rec)
	if err != nil {
		return "", "", err
	}
	a.model = &next
	return CheckedFull, "", nil
}

// checkpoint checks the kept checkpoint of round r: every chunk against its manifest,
// decoded within the network's bounds, and its root the NewRoot of record r-1 (root, hex).
// Its model state is taken where the audit had lost it.
func (a *auditor) checkpoint(r uint64, root string) error {
	c, _, err := a.src.LoadCheckpoint(r, a.lim)
	if err != nil {
		return fmt.Errorf("checkpoint of round %d: %w", r, err)
	}
	if got := c.Root(); hex.EncodeToString(got[:]) != root {
		return fmt.Errorf("checkpoint of round %d: its root %x is not the NewRoot %s of record %d", r, got[:8], root[:16], r-1)
	}
	if a.model == nil {
		a.model = &c.Model
	}
	return nil
}

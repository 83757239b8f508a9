package store

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lowband/lowband/incentives"
)

// ReplayDir applies the records held in dir (one encoded record per file; other entries
// and files whose names start with "." are skipped) to genesis in round order, checking
// evidence with chk (the network's checker, content check included, as node.NewParams
// builds it), and returns the resulting ledger and the number of records applied.
// A missing round, a file that does not decode and a record that does not apply are
// errors naming the file.
func ReplayDir(dir string, genesis *incentives.State, chk incentives.EvidenceChecker) (*incentives.State, int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("reading records: %w", err)
	}
	type named struct {
		file string
		rec  *incentives.Record
	}
	var recs []named
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		rec, err := readRecord(path)
		if err != nil {
			return nil, 0, err
		}
		recs = append(recs, named{path, rec})
	}
	slices.SortStableFunc(recs, func(a, b named) int {
		return cmpUint(a.rec.Round, b.rec.Round)
	})
	st := genesis
	for _, r := range recs {
		if r.rec.Round != st.Round {
			return nil, 0, fmt.Errorf("%s: record of round %d, but the ledger needs round %d next (missing or repeated round)", r.file, r.rec.Round, st.Round)
		}
		if st, _, err = st.Apply(r.rec, chk); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", r.file, err)
		}
	}
	return st, len(recs), nil
}

// readCapped reads a file of at most max bytes (larger: an error naming it), into a
// buffer of the file's size (a buffer grown by doubling would take up to twice that).
func readCapped(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > int64(max) {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, int64(max)+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if buf.Len() > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return buf.Bytes(), nil
}

func readRecord(path string) (*incentives.Record, error) {
	data, err := readCapped(path, incentives.MaxRecordSize)
	if err != nil {
		return nil, err
	}
	rec, err := incentives.DecodeRecord(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ExportRecords writes every stored record to dir, one file per round named
// round-<20 digits>.rec, in the format ReplayDir reads, and the node's signed records
// kept (PutSigned) to dir/signed, named round-<20 digits>.signed.
func (s *Store) ExportRecords(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	n := 0
	err := s.Records(0, func(round uint64, data []byte) error {
		n++
		return os.WriteFile(filepath.Join(dir, roundFile(round, "rec")), data, 0o644)
	})
	if err != nil {
		return n, err
	}
	return n, s.exportSigned(dir)
}

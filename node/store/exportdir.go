package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
)

// Files of an exported run: records as ExportRecords writes them, the node's signed
// records in the records directory's signed/ subdirectory, and checkpoints as manifests
// next to a chunks/ subdirectory of chunks named by their SHA-256 in hex.
const (
	signedDir = "signed"
	chunksDir = "chunks"
)

func roundFile(r uint64, ext string) string { return fmt.Sprintf("round-%020d.%s", r, ext) }

// roundOfFile is the round a file name of roundFile's form gives.
func roundOfFile(name, ext string) (uint64, bool) {
	var r uint64
	_, err := fmt.Sscanf(name, "round-%020d."+ext, &r)
	return r, err == nil && name == roundFile(r, ext)
}

// exportSigned writes the kept signed records to dir/signed.
func (s *Store) exportSigned(dir string) error {
	sub := filepath.Join(dir, signedDir)
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSigned).ForEach(func(k, v []byte) error {
			return os.WriteFile(filepath.Join(sub, roundFile(roundOf(k), "signed")), v, 0o644)
		})
	})
}

// ExportCheckpoints writes every kept checkpoint to dir: its manifest as
// round-<20 digits>.manifest and its chunks in dir/chunks. It returns how many.
func (s *Store) ExportCheckpoints(dir string) (int, error) {
	infos, err := s.Checkpoints()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, chunksDir), 0o755); err != nil {
		return 0, err
	}
	for _, in := range infos {
		if err := os.WriteFile(filepath.Join(dir, roundFile(in.Round, "manifest")), in.Manifest, 0o644); err != nil {
			return 0, err
		}
		for _, h := range in.Chunks {
			if err := os.WriteFile(filepath.Join(dir, chunksDir, hex.EncodeToString(h[:])), s.Chunk(h), 0o644); err != nil {
				return 0, err
			}
		}
	}
	return len(infos), nil
}

// Dir reads an exported run: records, signed records and checkpoints, for an audit. Files
// are size-capped and decoded as a peer's bytes would be.
type Dir struct {
	records     map[uint64]*incentives.Record
	bad         map[uint64]error // files named for a round that do not read or decode
	end         uint64           // one past the highest round of a record
	dir, ckpts  string
	checkpoints []CheckpointInfo
}

// OpenDir reads the records in dir (every file; see ReplayDir) and lists the checkpoint
// manifests in ckpts ("" for none). Two records of one round are an error.
func OpenDir(dir, ckpts string) (*Dir, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading records: %w", err)
	}
	d := &Dir{records: map[uint64]*incentives.Record{}, bad: map[uint64]error{}, dir: dir, ckpts: ckpts}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rec, err := readRecord(filepath.Join(dir, e.Name()))
		if r, named := roundOfFile(e.Name(), "rec"); err != nil && named {
			d.bad[r], d.end = err, max(d.end, r+1) // the audit names its round
			continue
		}
		if err != nil {
			return nil, err
		}
		if d.records[rec.Round] != nil {
			return nil, fmt.Errorf("%s: a second record of round %d", e.Name(), rec.Round)
		}
		d.records[rec.Round], d.end = rec, max(d.end, rec.Round+1)
	}
	if ckpts == "" {
		return d, nil
	}
	return d, d.listCheckpoints()
}

// listCheckpoints lists the manifests of d.ckpts by the round their names give.
func (d *Dir) listCheckpoints() error {
	entries, err := os.ReadDir(d.ckpts)
	if err != nil {
		return fmt.Errorf("reading checkpoints: %w", err)
	}
	for _, e := range entries {
		r, named := roundOfFile(e.Name(), "manifest")
		if !named {
			continue
		}
		d.checkpoints = append(d.checkpoints, CheckpointInfo{Round: r})
	}
	return nil
}

// Record is the record of a round; nil when the directory has none.
func (d *Dir) Record(r uint64) (*incentives.Record, error) { return d.records[r], d.bad[r] }

// Shards: an exported run has none.
func (d *Dir) Shards(uint64) ([]Shard, error) { return nil, nil }

// End is one past the highest round of a record.
func (d *Dir) End() (uint64, error) { return d.end, nil }

// Checkpoints lists the manifests found, by round (only Round is set), oldest first.
func (d *Dir) Checkpoints() ([]CheckpointInfo, error) { return d.checkpoints, nil }

// Signed is the signed record of round r in dir/signed; nil when there is none.
func (d *Dir) Signed(r uint64) ([]byte, error) {
	data, err := readCapped(filepath.Join(d.dir, signedDir, roundFile(r, "signed")), incentives.MaxSignedRecordSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// LoadCheckpoint reads the checkpoint of round r and assembles it (checkpoint.Assemble
// against its manifest's root, with lim). No local state comes with it.
func (d *Dir) LoadCheckpoint(r uint64, lim checkpoint.Limits) (*checkpoint.Checkpoint, []byte, error) {
	raw, err := readCapped(filepath.Join(d.ckpts, roundFile(r, "manifest")), checkpoint.MaxManifestSize)
	if err != nil {
		return nil, nil, err
	}
	m, err := checkpoint.DecodeManifest(raw, lim)
	if err != nil {
		return nil, nil, err
	}
	if m.Round != r {
		return nil, nil, fmt.Errorf("the manifest of round %d names round %d", r, m.Round)
	}
	chunks := make([][]byte, len(m.Chunks))
	for i, h := range m.Chunks {
		path := filepath.Join(d.ckpts, chunksDir, hex.EncodeToString(h[:]))
		if chunks[i], err = readCapped(path, int(m.ChunkSize)); err != nil {
			return nil, nil, err
		}
	}
	c, err := checkpoint.Assemble(m, chunks, m.Root, lim)
	return c, nil, err
}

package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/node/checkpoint"
)

// ErrNoCheckpoint: the store keeps no checkpoint of that round (or none at all).
var ErrNoCheckpoint = errors.New("no such checkpoint")

var (
	bucketCheckpoints = []byte("checkpoints")       // round -> CheckpointInfo
	bucketCkptLocal   = []byte("checkpoint-local")  // round -> the node's local state blob
	bucketCkptIDs     = []byte("checkpoint-ids")    // manifest ID -> round
	bucketCkptRoots   = []byte("checkpoint-roots")  // state root -> round
	bucketCkptChunks  = []byte("checkpoint-chunks") // SHA-256 -> chunk
	checkpointBuckets = [][]byte{bucketCheckpoints, bucketCkptLocal, bucketCkptIDs, bucketCkptRoots, bucketCkptChunks}
)

// localFormat prefixes a stored local state blob, so that an empty blob is a value.
const localFormat = 1

// CheckpointInfo is one kept checkpoint: its manifest and what names it.
type CheckpointInfo struct {
	Round    uint64     `cbor:"1,keyasint"`
	ID       [32]byte   `cbor:"2,keyasint"` // the manifest's ID
	Root     [32]byte   `cbor:"3,keyasint"`
	Size     uint64     `cbor:"4,keyasint"` // bytes of the checkpoint's encoding
	Manifest []byte     `cbor:"5,keyasint"` // its canonical encoding
	Chunks   [][32]byte `cbor:"6,keyasint"` // the manifest's chunk hashes
	// Files: its bytes and local state are in the checkpoints directory (see
	// CheckpointsSuffix), in chunks of ChunkSize bytes. Builds before it kept them in the
	// "checkpoint-chunks" and "checkpoint-local" buckets, still read for those it names.
	Files     bool   `cbor:"7,keyasint,omitempty"`
	ChunkSize uint32 `cbor:"8,keyasint,omitempty"`
	LocalSum  []byte `cbor:"9,keyasint,omitempty"` // names its local state file
}

// PutCheckpoint stores a checkpoint (its manifest and chunks, checked against each other)
// with local, the node's private state that goes with it (opaque here; may be nil): the
// bytes in files of the checkpoints directory, each synced, then what names them in one
// synced transaction that also drops all but the keep latest checkpoints (keep < 1: 1);
// the files of the checkpoints dropped are removed after it. A checkpoint of a round
// already kept replaces it. A kill leaves the checkpoints kept before or after, and at
// most files no checkpoint names, which the next Open removes.
func (s *Store) PutCheckpoint(m *checkpoint.Manifest, chunks [][]byte, local []byte, keep int) error {
	s.files.Lock()
	defer s.files.Unlock()
	defer func() { _ = s.sweepFiles() }()
	put, err := s.stageCheckpoint(m, chunks, local, keep)
	if err != nil {
		return err
	}
	if err := s.db.Update(put); err != nil {
		return fmt.Errorf("storing the checkpoint of round %d: %w", m.Round, err)
	}
	return nil
}

// dropCheckpoint removes the checkpoint of round r and its indexes, if kept; its chunks
// stay until pruneCheckpoints drops those no kept checkpoint uses.
func dropCheckpoint(tx *bolt.Tx, r uint64) error {
	key := roundKey(r)
	raw := tx.Bucket(bucketCheckpoints).Get(key)
	if raw == nil {
		return nil
	}
	info, err := decodeInfo(raw)
	if err != nil {
		return err
	}
	for _, d := range []struct{ bucket, k []byte }{
		{bucketCheckpoints, key}, {bucketCkptLocal, key}, {bucketCkptIDs, info.ID[:]}, {bucketCkptRoots, info.Root[:]},
	} {
		if err := tx.Bucket(d.bucket).Delete(d.k); err != nil {
			return err
		}
	}
	return nil
}

// DropCheckpointsAfter drops the kept checkpoints of rounds after from, and the chunks
// only they used, in one transaction: when the rounds from on are closed again (a
// repair), the checkpoints that follow from them are no longer the canonical state.
func (s *Store) DropCheckpointsAfter(from uint64) error {
	defer s.afterCheckpoints()
	return s.db.Update(func(tx *bolt.Tx) error { return dropCheckpointsAfter(tx, from) })
}

// dropCheckpointsAfter is DropCheckpointsAfter inside tx (for a reorg's transaction).
func dropCheckpointsAfter(tx *bolt.Tx, from uint64) error {
	var rounds []uint64
	c := tx.Bucket(bucketCheckpoints).Cursor()
	for k, _ := c.Seek(roundKey(from + 1)); k != nil; k, _ = c.Next() {
		rounds = append(rounds, roundOf(k))
	}
	for _, r := range rounds {
		if err := dropCheckpoint(tx, r); err != nil {
			return err
		}
	}
	return pruneChunks(tx)
}

// pruneCheckpoints keeps the keep latest checkpoints and the chunks they use.
func pruneCheckpoints(tx *bolt.Tx, keep int) error {
	var rounds []uint64
	c := tx.Bucket(bucketCheckpoints).Cursor()
	for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
		rounds = append(rounds, roundOf(k))
	}
	for _, r := range rounds[min(keep, len(rounds)):] {
		if err := dropCheckpoint(tx, r); err != nil {
			return err
		}
	}
	return pruneChunks(tx)
}

// pruneChunks drops the chunks no kept checkpoint uses.
func pruneChunks(tx *bolt.Tx) error {
	used := map[[32]byte]bool{}
	err := tx.Bucket(bucketCheckpoints).ForEach(func(_, v []byte) error {
		info, err := decodeInfo(v)
		for _, h := range info.Chunks {
			used[h] = true
		}
		return err
	})
	if err != nil {
		return err
	}
	var unused [][]byte
	err = tx.Bucket(bucketCkptChunks).ForEach(func(k, _ []byte) error {
		if len(k) != 32 || !used[[32]byte(k)] {
			unused = append(unused, bytes.Clone(k))
		}
		return nil
	})
	for _, k := range unused {
		if err == nil {
			err = tx.Bucket(bucketCkptChunks).Delete(k)
		}
	}
	return err
}

func roundOf(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

func decodeInfo(raw []byte) (CheckpointInfo, error) {
	var info CheckpointInfo
	if err := cbor.Unmarshal(raw, &info); err != nil {
		return CheckpointInfo{}, fmt.Errorf("%w: stored checkpoint: %v", ErrCorrupt, err)
	}
	return info, nil
}

// Checkpoints lists the kept checkpoints, oldest first.
func (s *Store) Checkpoints() ([]CheckpointInfo, error) {
	var out []CheckpointInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCheckpoints).ForEach(func(_, v []byte) error {
			info, err := decodeInfo(v)
			out = append(out, info)
			return err
		})
	})
	return out, err
}

// LatestCheckpoint is the kept checkpoint of the highest round (ErrNoCheckpoint: none).
func (s *Store) LatestCheckpoint() (CheckpointInfo, error) {
	var info CheckpointInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		_, v := tx.Bucket(bucketCheckpoints).Cursor().Last()
		if v == nil {
			return ErrNoCheckpoint
		}
		var err error
		info, err = decodeInfo(v)
		return err
	})
	return info, err
}

// CheckpointAt is the kept checkpoint of round r (ErrNoCheckpoint: none).
func (s *Store) CheckpointAt(r uint64) (CheckpointInfo, error) {
	var info CheckpointInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCheckpoints).Get(roundKey(r))
		if v == nil {
			return fmt.Errorf("%w: round %d", ErrNoCheckpoint, r)
		}
		var err error
		info, err = decodeInfo(v)
		return err
	})
	return info, err
}

// CheckpointLocal is the node's local state stored with the checkpoint of round r.
func (s *Store) CheckpointLocal(r uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketCheckpoints).Get(roundKey(r))
		if raw == nil {
			return fmt.Errorf("%w: round %d", ErrNoCheckpoint, r)
		}
		info, err := decodeInfo(raw)
		if err != nil {
			return err
		}
		if info.Files {
			out, err = s.fileLocal(info)
			return err
		}
		v := tx.Bucket(bucketCkptLocal).Get(roundKey(r))
		if v == nil {
			return fmt.Errorf("%w: local state of checkpoint %d", ErrCorrupt, r)
		}
		if len(v) == 0 || v[0] != localFormat {
			return fmt.Errorf("%w: local state of checkpoint %d", ErrCorrupt, r)
		}
		out = bytes.Clone(v[1:])
		return nil
	})
	return out, err
}

// ManifestByID is the manifest of a kept checkpoint by its ID; nil when none is kept.
func (s *Store) ManifestByID(id [32]byte) []byte { return s.manifestBy(bucketCkptIDs, id) }

// ManifestByRoot is the manifest of the kept checkpoint of a state root; nil when none.
func (s *Store) ManifestByRoot(root [32]byte) []byte { return s.manifestBy(bucketCkptRoots, root) }

func (s *Store) manifestBy(index []byte, key [32]byte) []byte {
	var out []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		r := tx.Bucket(index).Get(key[:])
		if r == nil {
			return nil
		}
		if info, err := decodeInfo(tx.Bucket(bucketCheckpoints).Get(r)); err == nil {
			out = info.Manifest
		}
		return nil
	})
	return out
}

// Chunk is a chunk of a kept checkpoint by its SHA-256; nil when none is kept.
func (s *Store) Chunk(hash [32]byte) []byte {
	if out, ok := s.fileChunk(hash); ok {
		return out
	}
	var out []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket(bucketCkptChunks).Get(hash[:]))
		return nil
	})
	return out
}

// LoadCheckpoint reads the kept checkpoint of round r and the local state stored with it,
// and checks it as a fetched one (checkpoint.Assemble against its own root, with lim).
func (s *Store) LoadCheckpoint(r uint64, lim checkpoint.Limits) (*checkpoint.Checkpoint, []byte, error) {
	info, err := s.CheckpointAt(r)
	if err != nil {
		return nil, nil, err
	}
	m, err := checkpoint.DecodeManifest(info.Manifest, lim)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: checkpoint of round %d: %v", ErrCorrupt, r, err)
	}
	var chunks [][]byte
	if info.Files {
		if chunks, err = s.fileChunks(info); err != nil {
			return nil, nil, err
		}
	} else {
		chunks = make([][]byte, len(m.Chunks))
		for i, h := range m.Chunks {
			chunks[i] = s.Chunk(h)
		}
	}
	c, err := checkpoint.Assemble(m, chunks, m.Root, lim)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: checkpoint of round %d: %v", ErrCorrupt, r, err)
	}
	local, err := s.CheckpointLocal(r)
	return c, local, err
}

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/node/checkpoint"
)

// CheckpointsSuffix names the directory beside the store's file that holds the bytes of
// the kept checkpoints: the store's path with this suffix. Each checkpoint is two files
// named by its manifest's ID in hex: <id>.ckpt, its encoding (the chunks in order), and
// <id>.local, the node's local state kept with it. The bbolt file keeps only what names
// them (CheckpointInfo), so a checkpoint's tens of MB are never copied into bbolt's page
// buffers, never rewritten when a later checkpoint's chunks land beside them in a B-tree
// leaf, and never mapped into the process when read or served.
const CheckpointsSuffix = ".checkpoints"

const (
	ckptExt  = ".ckpt"
	localExt = ".local"
)

// chunkAt is where a chunk of a kept checkpoint lies: its checkpoint's ID and its index.
type chunkAt struct {
	id   [32]byte
	off  int64
	size int
}

func (s *Store) ckptDir() string { return s.path + CheckpointsSuffix }

func (s *Store) ckptPath(id [32]byte, ext string) string {
	return filepath.Join(s.ckptDir(), hexID(id)+ext)
}

func hexID(id [32]byte) string { return hex.EncodeToString(id[:]) }

// localPath is the file of the local state kept with the checkpoint info: <id>-<the first
// 8 bytes of the blob's SHA-256>.local.
func (s *Store) localPath(info CheckpointInfo) string {
	return filepath.Join(s.ckptDir(), hexID(info.ID)+"-"+hex.EncodeToString(info.LocalSum)+localExt)
}

// stageCheckpoint checks a checkpoint's chunks against its manifest, writes its files
// (each synced and renamed into place) and returns what keeps it in a transaction,
// dropping all but the keep latest checkpoints (keep < 1: 1). The caller holds s.files
// and calls s.sweepFiles once the transaction is over, whatever its outcome: the files of
// a checkpoint no transaction kept are removed then.
func (s *Store) stageCheckpoint(m *checkpoint.Manifest, chunks [][]byte, local []byte, keep int) (func(*bolt.Tx) error, error) {
	if len(chunks) != len(m.Chunks) {
		return nil, fmt.Errorf("checkpoint of round %d: %d chunks, manifest lists %d", m.Round, len(chunks), len(m.Chunks))
	}
	for i, ch := range chunks {
		if err := m.CheckChunk(i, ch); err != nil {
			return nil, fmt.Errorf("checkpoint of round %d: %w", m.Round, err)
		}
	}
	if err := s.checkLocal(m.Round, local); err != nil {
		return nil, err
	}
	if err := writeSynced(s.ckptPath(m.ID(), ckptExt), chunks...); err != nil {
		return nil, fmt.Errorf("writing the checkpoint of round %d: %w", m.Round, err)
	}
	return s.nameCheckpoint(m, local, keep)
}

// checkLocal checks the size of a local state kept with a checkpoint, and makes the
// checkpoints directory.
func (s *Store) checkLocal(r uint64, local []byte) error {
	if len(local) > MaxLocalBytes {
		return fmt.Errorf("checkpoint of round %d: local state of %d bytes (at most %d)", r, len(local), MaxLocalBytes)
	}
	if err := os.MkdirAll(s.ckptDir(), 0o700); err != nil {
		return fmt.Errorf("checkpoint of round %d: %w", r, err)
	}
	return nil
}

// nameCheckpoint writes the local state file of the checkpoint m, whose encoding is in
// its file already, and returns what keeps m in a transaction (see stageCheckpoint).
func (s *Store) nameCheckpoint(m *checkpoint.Manifest, local []byte, keep int) (func(*bolt.Tx) error, error) {
	sum := sha256.Sum256(local)
	info := CheckpointInfo{Round: m.Round, ID: m.ID(), Root: m.Root, Size: m.Size, Manifest: m.Marshal(), Chunks: m.Chunks,
		Files: true, ChunkSize: m.ChunkSize, LocalSum: sum[:8]}
	enc, err := eventEnc.Marshal(&info)
	if err != nil {
		return nil, err
	}
	// Named by its bytes too: storing a kept checkpoint again with another local state
	// leaves the kept one's file as it is until the transaction commits.
	if err := writeSynced(s.localPath(info), local); err != nil {
		return nil, fmt.Errorf("writing the local state of checkpoint %d: %w", m.Round, err)
	}
	return func(tx *bolt.Tx) error {
		if err := dropCheckpoint(tx, m.Round); err != nil {
			return err
		}
		key := roundKey(m.Round)
		for _, p := range []struct{ bucket, k, v []byte }{
			{bucketCheckpoints, key, enc}, {bucketCkptIDs, info.ID[:], key}, {bucketCkptRoots, info.Root[:], key},
		} {
			if err := tx.Bucket(p.bucket).Put(p.k, p.v); err != nil {
				return err
			}
		}
		return pruneCheckpoints(tx, max(keep, 1))
	}, nil
}

// WriteCheckpoint keeps the checkpoint c with local as PutCheckpoint keeps its split, but
// encodes it straight into its file (checkpoint.WriteSplit, chunks of the default size):
// no copy of its values or of its encoding is held in memory. It returns its manifest.
func (s *Store) WriteCheckpoint(c *checkpoint.Checkpoint, local []byte, keep int) (*checkpoint.Manifest, error) {
	s.files.Lock()
	defer s.files.Unlock()
	defer func() { _ = s.sweepFiles() }()
	if err := s.checkLocal(c.Round, local); err != nil {
		return nil, err
	}
	var m *checkpoint.Manifest
	tmp, err := writeTemp(s.ckptDir(), "checkpoint"+ckptExt, func(w io.Writer) (err error) {
		m, err = checkpoint.WriteSplit(c, 0, w)
		return err
	})
	if err == nil {
		err = renameSynced(tmp, s.ckptPath(m.ID(), ckptExt))
	}
	if err != nil {
		return nil, fmt.Errorf("writing the checkpoint of round %d: %w", c.Round, err)
	}
	put, err := s.nameCheckpoint(m, local, keep)
	if err != nil {
		return nil, err
	}
	if err := s.db.Update(put); err != nil {
		return nil, fmt.Errorf("storing the checkpoint of round %d: %w", m.Round, err)
	}
	return m, nil
}

// sweepFiles rebuilds the index of the kept checkpoints' chunks from the stored
// CheckpointInfos and removes every file of the checkpoints directory that no kept
// checkpoint names (those a dropped checkpoint left, a transaction that failed or a kill
// before it committed, and temporary files). The caller holds s.files. A file it cannot
// remove stays, to be removed by a later sweep.
func (s *Store) sweepFiles() error {
	infos, err := s.Checkpoints()
	if err != nil {
		return err
	}
	idx := map[[32]byte]chunkAt{}
	kept := map[string]bool{}
	for _, in := range infos {
		if !in.Files {
			continue
		}
		if err := in.checkChunking(); err != nil {
			return err
		}
		for i, h := range in.Chunks {
			off, size := in.chunkSpan(i)
			idx[h] = chunkAt{id: in.ID, off: off, size: size}
		}
		name := hexID(in.ID)
		kept[name+ckptExt], kept[filepath.Base(s.localPath(in))] = true, true
	}
	s.idxMu.Lock()
	s.chunkIdx = idx
	s.idxMu.Unlock()
	entries, err := os.ReadDir(s.ckptDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		ours := strings.HasSuffix(n, ckptExt) || strings.HasSuffix(n, localExt) || strings.Contains(n, ".tmp")
		if ours && !kept[n] && !e.IsDir() {
			_ = os.Remove(filepath.Join(s.ckptDir(), n))
		}
	}
	return nil
}

// afterCheckpoints sweeps the checkpoint files after a transaction that may have dropped
// checkpoints (a reorg, a jump, DropCheckpointsAfter). A failed sweep leaves files that
// the next one removes; the index is what the committed transaction keeps either way.
func (s *Store) afterCheckpoints() {
	s.files.Lock()
	defer s.files.Unlock()
	_ = s.sweepFiles()
}

// fileChunk reads a chunk of a kept checkpoint from its file; ok is false when no kept
// checkpoint's file holds a chunk of that hash.
func (s *Store) fileChunk(hash [32]byte) (out []byte, ok bool) {
	s.idxMu.RLock()
	at, ok := s.chunkIdx[hash]
	s.idxMu.RUnlock()
	if !ok {
		return nil, false
	}
	f, err := os.Open(s.ckptPath(at.id, ckptExt))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	out = make([]byte, at.size)
	if _, err := f.ReadAt(out, at.off); err != nil {
		return nil, false
	}
	return out, true
}

// chunkSpan is where chunk i of a checkpoint kept in files lies in its file.
func (in *CheckpointInfo) chunkSpan(i int) (off int64, size int) {
	off = int64(i) * int64(in.ChunkSize)
	if i == len(in.Chunks)-1 {
		return off, int(int64(in.Size) - off)
	}
	return off, int(in.ChunkSize)
}

// checkChunking checks that a checkpoint kept in files has as many chunks as its size
// and chunk size give.
func (in *CheckpointInfo) checkChunking() error {
	if in.ChunkSize == 0 || in.Size == 0 || uint64(len(in.Chunks)) != (in.Size+uint64(in.ChunkSize)-1)/uint64(in.ChunkSize) {
		return fmt.Errorf("%w: checkpoint of round %d: %d chunks of %d bytes for %d bytes", ErrCorrupt, in.Round, len(in.Chunks), in.ChunkSize, in.Size)
	}
	return nil
}

// fileChunks reads the chunks of the kept checkpoint info (whose bytes are in its file):
// the file must be info.Size bytes long.
func (s *Store) fileChunks(info CheckpointInfo) ([][]byte, error) {
	if err := info.checkChunking(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.ckptPath(info.ID, ckptExt))
	if err != nil {
		return nil, fmt.Errorf("%w: checkpoint of round %d: %v", ErrCorrupt, info.Round, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || uint64(fi.Size()) != info.Size {
		return nil, fmt.Errorf("%w: checkpoint of round %d: its file is not %d bytes", ErrCorrupt, info.Round, info.Size)
	}
	enc := make([]byte, info.Size)
	if _, err := io.ReadFull(f, enc); err != nil {
		return nil, fmt.Errorf("%w: checkpoint of round %d: %v", ErrCorrupt, info.Round, err)
	}
	chunks := make([][]byte, len(info.Chunks))
	for i := range chunks {
		off, size := info.chunkSpan(i)
		chunks[i] = enc[off : off+int64(size) : off+int64(size)]
	}
	return chunks, nil
}

// fileLocal reads the local state kept with the checkpoint info from its file.
func (s *Store) fileLocal(info CheckpointInfo) ([]byte, error) {
	v, err := readCapped(s.localPath(info), MaxLocalBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: local state of checkpoint %d: %v", ErrCorrupt, info.Round, err)
	}
	return v, nil
}

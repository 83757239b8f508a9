package store

import (
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
	if len(local) > MaxLocalBytes {
		return nil, fmt.Errorf("checkpoint of round %d: local state of %d bytes (at most %d)", m.Round, len(local), MaxLocalBytes)
	}
	info := CheckpointInfo{Round: m.Round, ID: m.ID(), Root: m.Root, Size: m.Size, Manifest: m.Marshal(), Chunks: m.Chunks,
		Files: true, ChunkSize: m.ChunkSize}
	enc, err := eventEnc.Marshal(&info)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.ckptDir(), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint of round %d: %w", m.Round, err)
	}
	if err := writeSynced(s.ckptPath(info.ID, ckptExt), chunks...); err != nil {
		return nil, fmt.Errorf("writing the checkpoint of round %d: %w", m.Round, err)
	}
	if err := writeSynced(s.ckptPath(info.ID, localExt), local); err != nil {
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
		kept[name+ckptExt], kept[name+localExt] = true, true
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
	v, err := readCapped(s.ckptPath(info.ID, localExt), MaxLocalBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: local state of checkpoint %d: %v", ErrCorrupt, info.Round, err)
	}
	return v, nil
}

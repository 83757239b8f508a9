package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/lowband/lowband/incentives"
)

// Errors of Open and Commit.
var (
	// ErrLocked: another process holds the store open.
	ErrLocked = errors.New("store is locked by another process (is a node running with this home?)")
	// ErrCorrupt: the file is not a store, or is damaged.
	ErrCorrupt = errors.New("store file is corrupt")
	// ErrGenesisMismatch: the store holds the ledger of another genesis (another network).
	ErrGenesisMismatch = errors.New("store belongs to another genesis")
	// ErrNotInitialised: the store has no ledger yet; call Init.
	ErrNotInitialised = errors.New("store has no ledger yet")
	// ErrConflict: a record that does not follow the stored ledger.
	ErrConflict = errors.New("record does not follow the stored ledger")
)

// layoutVersion 2: history keys carry the peer's length (see historyPrefix).
const layoutVersion = 2

var (
	bucketMeta     = []byte("meta")
	bucketRecords  = []byte("records")
	bucketEvidence = []byte("evidence")
	bucketHistory  = []byte("history")
	keyState       = []byte("state")
	keyGenesis     = []byte("genesis")
	keyVersion     = []byte("version")
)

// Store is an open ledger store.
type Store struct {
	db   *bolt.DB
	path string // of the bbolt file; the local state is beside it (PutLocal)

	mu    sync.Mutex
	state *incentives.State // the stored state, decoded; nil before Init

	// files is held from writing a checkpoint's files to sweeping those no kept
	// checkpoint names (see CheckpointsSuffix); taken after mu when both are.
	files    sync.Mutex
	idxMu    sync.RWMutex
	chunkIdx map[[32]byte]chunkAt // the chunks of the checkpoints kept in files
}

// initialMmap is the size bbolt maps the file with from the start (address space only: a
// page takes memory when read). Each time a growing file outgrows its map, bbolt maps it
// again and first copies every key and value the write transaction holds to the heap:
// storing a checkpoint of 16 MB in a new store allocated 7 times its size that way. A
// node's file stays well below this on the default task.
const initialMmap = 1 << 30

// Open opens (or creates) the store at path, waiting at most timeout for the file lock.
func Open(path string, timeout time.Duration) (s *Store, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, InitialMmapSize: initialMmap, FreelistType: bolt.FreelistMapType})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("opening %s: %w: %v", path, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s = &Store{db: db, path: path}
	// bbolt panics on some kinds of page damage; report them as a corrupt file.
	defer func() {
		if r := recover(); r != nil {
			db.Close()
			s, err = nil, fmt.Errorf("opening %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s.files.Lock()
	err = s.sweepFiles()
	s.files.Unlock()
	// A kill while a local state was written leaves its temporary file: this process
	// holds the lock now, so no other writes one.
	if tmps, _ := filepath.Glob(path + LocalSuffix + ".tmp*"); err == nil {
		for _, t := range tmps {
			_ = os.Remove(t)
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return s, nil
}

// load creates the buckets and reads the stored state, if any.
func (s *Store) load() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range append([][]byte{bucketMeta, bucketRecords, bucketEvidence, bucketHistory, bucketStates, bucketRoundEvents, bucketShards, bucketLocal, bucketSigned, bucketVotes}, checkpointBuckets...) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyVersion); v == nil {
			if err := meta.Put(keyVersion, []byte{layoutVersion}); err != nil {
				return err
			}
		} else if len(v) != 1 || v[0] != layoutVersion {
			return fmt.Errorf("%w: layout version %v, this build reads %d", ErrCorrupt, v, layoutVersion)
		}
		raw := meta.Get(keyState)
		if raw == nil {
			return nil
		}
		st, err := incentives.DecodeState(raw)
		if err != nil {
			return fmt.Errorf("%w: stored ledger: %v", ErrCorrupt, err)
		}
		s.state = st
		return nil
	})
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Init stores genesis as the ledger if the store is empty, and drops a local state file
// left beside it (of a store removed before). If it already holds a ledger, Init checks
// that it grew from the same genesis (ErrGenesisMismatch otherwise) and keeps it.
func (s *Store) Init(genesis *incentives.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if g := meta.Get(keyGenesis); g != nil {
			if !bytes.Equal(g, genesis.Head) {
				return fmt.Errorf("%w: stored genesis root %x, spec gives %x", ErrGenesisMismatch, g, genesis.Head)
			}
			return nil
		}
		if err := dropLocalFile(s.path); err != nil {
			return err
		}
		if err := meta.Put(keyGenesis, genesis.Head); err != nil {
			return err
		}
		if err := meta.Put(keyState, genesis.Marshal()); err != nil {
			return err
		}
		if err := keepState(tx, genesis); err != nil {
			return err
		}
		s.state = genesis
		return nil
	})
}

// State returns the stored ledger. The returned value is never modified by the store.
func (s *Store) State() (*incentives.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil, ErrNotInitialised
	}
	return s.state, nil
}

// Commit stores a committed round in one transaction: the record, the evidence it includes,
// the events, the new state and the shards of the contributions it included (those given:
// each of a peer the record lists, at an index it lists; see Shards). rec must follow the
// stored ledger and next must be what applying it gives (same round, Head equal to
// rec.NewRoot); otherwise ErrConflict and nothing is written. It returns after the
// transaction is on disk.
func (s *Store) Commit(rec *incentives.Record, next *incentives.State, events []incentives.Event, shards ...Shard) error {
	return s.commit(Round{Record: rec, State: next, Events: events, Shards: shards})
}

// commit is Commit of r, keeping r.Signed (see CommitSigned) and r.Vote (see CommitRound)
// in the same transaction when set.
func (s *Store) commit(r Round) error {
	rec, next, shards := r.Record, r.State, r.Shards
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return ErrNotInitialised
	}
	switch {
	case rec.Round != s.state.Round || !bytes.Equal(rec.PrevRoot, s.state.Head):
		return fmt.Errorf("%w: record %d after %x, ledger expects round %d after %x", ErrConflict, rec.Round, rec.PrevRoot, s.state.Round, s.state.Head)
	case next.Round != rec.Round+1 || !bytes.Equal(next.Head, rec.NewRoot):
		return fmt.Errorf("%w: the state given is not the one record %d leads to", ErrConflict, rec.Round)
	}
	if err := checkShards(rec, shards); err != nil {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := writeRound(tx, r); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyState, next.Marshal())
	})
	if err != nil {
		return fmt.Errorf("committing round %d: %w", rec.Round, err)
	}
	s.state = next
	return nil
}

// Apply applies rec to the stored ledger with chk and commits the result: the usual way to
// take in a record. It returns the new state and the events.
func (s *Store) Apply(rec *incentives.Record, chk incentives.EvidenceChecker) (*incentives.State, []incentives.Event, error) {
	st, err := s.State()
	if err != nil {
		return nil, nil, err
	}
	next, events, err := st.Apply(rec, chk)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Commit(rec, next, events); err != nil {
		return nil, nil, err
	}
	return next, events, nil
}

func roundKey(r uint64) []byte { return binary.BigEndian.AppendUint64(nil, r) }

var eventEnc = func() cbor.EncMode {
	m, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}()

// putEvents writes events to the history, each indexed by its round.
func putEvents(tx *bolt.Tx, events []incentives.Event) error {
	b := tx.Bucket(bucketHistory)
	for i, e := range events {
		v, err := eventEnc.Marshal(&e)
		if err != nil {
			return err
		}
		k, err := historyPrefix(e.Peer)
		if err != nil {
			return err
		}
		k = binary.BigEndian.AppendUint64(k, e.Round)
		k = binary.BigEndian.AppendUint32(k, uint32(i))
		if err := b.Put(k, v); err != nil {
			return err
		}
		if err := indexEvent(tx, e.Round, i, k); err != nil {
			return err
		}
	}
	return nil
}

// historyPrefix is the key prefix of peer's events: the peer's length, then the peer. No
// peer's prefix is a prefix of another's, whatever bytes the names hold.
func historyPrefix(peer string) ([]byte, error) {
	if len(peer) > math.MaxUint16 {
		return nil, fmt.Errorf("peer name of %d bytes", len(peer))
	}
	k := binary.BigEndian.AppendUint16(nil, uint16(len(peer)))
	return append(k, peer...), nil
}

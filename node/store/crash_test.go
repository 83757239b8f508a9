package store

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

const crashEnv = "LOWBAND_STORE_CRASH_CHILD"

// TestCrashChild is the child of TestCrash: it commits rounds to the store named by the
// environment until it is killed, printing each round once its Commit has returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("run by TestCrash")
	}
	s, err := Open(path, 5*time.Second)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := s.Init(testGenesis(t)); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	for {
		next, err := commitRound(s, fx, chk)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println("committed", next.Round-1)
	}
}

// TestCrash kills a child committing rounds with SIGKILL at random moments, over and
// over on the same store. After each kill the reopened ledger must be the ledger after
// some prefix of the rounds, and that prefix must include every round the child reported
// committed: nothing committed is lost and no round is half applied.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "store.db")
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	states := []*incentives.State{testGenesis(t)} // states[k]: the ledger after k rounds
	rng := rand.New(rand.NewPCG(7, 7))
	deadline := time.Now().Add(20 * time.Second)
	kills := 0
	for ; kills < 15 && time.Now().Before(deadline); kills++ {
		reported := runAndKill(t, path, time.Duration(20+rng.IntN(150))*time.Millisecond)
		s, err := Open(path, 5*time.Second)
		if err != nil {
			t.Fatalf("kill %d: reopening: %v", kills, err)
		}
		got, err := s.State()
		s.Close()
		if err != nil {
			if reported < 0 {
				continue // killed before genesis was stored
			}
			t.Fatalf("kill %d: %v", kills, err)
		}
		for uint64(len(states)) <= got.Round {
			states = append(states, nextState(t, states[len(states)-1], fx, chk))
		}
		if !got.Equal(states[got.Round]) {
			t.Fatalf("kill %d: stored ledger at round %d is not the ledger after %d rounds", kills, got.Round, got.Round)
		}
		if int64(got.Round) < reported+1 {
			t.Fatalf("kill %d: child reported round %d committed, store holds only %d rounds", kills, reported, got.Round)
		}
		t.Logf("kill %d: child reported %d, store holds %d rounds", kills, reported, got.Round)
	}
	if kills < 10 || len(states) < 10 {
		t.Fatalf("only %d kills and %d rounds in the time allowed", kills, len(states))
	}
}

func nextState(t *testing.T, st *incentives.State, fx *incentivestest.Fixture, chk incentives.EvidenceChecker) *incentives.State {
	cs, es := genRound(fx, st.Round)
	cl, err := st.Build(cs, es, []byte(fmt.Sprintf("model %d", st.Round)), chk)
	next := cl.State
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// runAndKill starts the child, kills it after d (once it has committed something or d has
// passed) and returns the last round it reported committed (-1 for none).
func runAndKill(t *testing.T, path string, d time.Duration) int64 {
	return killChild(t, "TestCrashChild", crashEnv, path, d)
}

// killChild runs the test child with env set to path, kills it with SIGKILL after d and
// returns the last n of the lines "committed n" it printed (-1 for none).
func killChild(t *testing.T, child, env, path string, d time.Duration) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	last := int64(-1)
	timer := time.After(d)
	killed := false
	for line := range lines {
		if !killed {
			select {
			case <-timer:
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			default:
			}
		}
		var r int64
		if _, err := fmt.Sscanf(line, "committed %d", &r); err == nil {
			last = r // a line read after the kill was written before it: still committed
		} else if !killed {
			t.Fatalf("child: %s", line)
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatal("child exited by itself")
	}
	return last
}

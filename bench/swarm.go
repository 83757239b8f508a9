package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/p2p"
)

// SwarmOptions configures `lowband bench swarm`.
type SwarmOptions struct {
	Nodes  int
	Rounds int
	Task   string // configs.TaskCharLM (default), TaskFMNIST or TaskSynthetic
	// InnerSteps and Batch, when above 0, replace the task's default H and batch size.
	InnerSteps, Batch int
	// Adversaries are the adversary modes (node.AdversaryKinds) of the first nodes, one
	// each; the others are honest.
	Adversaries []string
	// LinkMbps and LatencyMS, when either is above 0, run the nodes on an in-memory
	// network (go-libp2p's mocknet) where each has a home link: an uplink of LinkMbps
	// shared by all its streams (0: unlimited) and LatencyMS one way (p2p.LinkShape).
	// Otherwise they run on loopback sockets.
	LinkMbps, LatencyMS float64
	// Dir is where the nodes' homes are made; it must exist and be empty.
	Dir string
	// DeadlineMin and DeadlineMax are the round's adaptive deadline bounds in seconds
	// (0: 10 and 30).
	DeadlineMin, DeadlineMax float64
	// Aggregation, when its method is set, replaces the task's default aggregation rule.
	Aggregation configs.AggregationSpec
	// ComputeSlots, when above 0, is how many nodes may run an inner step or an evaluation
	// at once (node.Options.Compute): with as many as the process has cores, no node's
	// network work waits behind the compute of many nodes sharing them, as it would not
	// on a machine of its own. A freed slot goes to the waiting node that has computed
	// least, so the nodes keep pace as on equal machines. 0: every node computes when the
	// Go scheduler lets it.
	ComputeSlots int
	// Merge, when set, replaces the recipe's outer.merge (a node closes a round during
	// the next round's local work and moves that work to θ after it); nil keeps the task's
	// default.
	Merge *bool
}

// swarmPoll is how often the bench reads the nodes' statuses.
const swarmPoll = 100 * time.Millisecond

func (o *SwarmOptions) validate() error {
	if o.Task == "" {
		o.Task = configs.TaskCharLM
	}
	if o.DeadlineMin == 0 && o.DeadlineMax == 0 {
		o.DeadlineMin, o.DeadlineMax = 10, 30
	}
	switch {
	case o.Nodes < 1 || o.Rounds < 1:
		return fmt.Errorf("bench swarm: %d nodes, %d rounds: both must be positive", o.Nodes, o.Rounds)
	case o.InnerSteps < 0 || o.Batch < 0:
		return fmt.Errorf("bench swarm: inner steps %d, batch %d: negative", o.InnerSteps, o.Batch)
	case len(o.Adversaries) >= o.Nodes:
		return fmt.Errorf("bench swarm: %d adversaries among %d nodes leave no honest node", len(o.Adversaries), o.Nodes)
	case o.ComputeSlots < 0:
		return fmt.Errorf("bench swarm: %d compute slots: negative", o.ComputeSlots)
	case o.LinkMbps < 0 || o.LatencyMS < 0:
		return fmt.Errorf("bench swarm: link %v Mbit/s, latency %v ms: negative", o.LinkMbps, o.LatencyMS)
	case o.Dir == "":
		return errors.New("bench swarm: no directory for the homes")
	}
	for _, k := range o.Adversaries {
		if !slices.Contains(node.AdversaryKinds, k) {
			return fmt.Errorf("bench swarm: unknown adversary kind %q (want one of %v)", k, node.AdversaryKinds)
		}
	}
	return nil
}

// swarmHome is one training node's home before it starts.
type swarmHome struct {
	home configs.Home
	cfg  *configs.Config
	id   string
}

// RunSwarm starts a bootstrap node and opt.Nodes training nodes in this process, on
// loopback or on emulated links (SwarmOptions.LinkMbps), each with its own home under
// opt.Dir, on one generated local network spec, lets them train opt.Rounds rounds, and
// measures the run from their statuses; once they have stopped, it trains the dense
// AllReduce baseline. A progress line per round goes to logw (may be nil).
func RunSwarm(ctx context.Context, opt SwarmOptions, logw io.Writer) (*SwarmResult, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if logw == nil {
		logw = io.Discard
	}
	homes, err := swarmHomes(opt)
	if err != nil {
		return nil, err
	}
	spec, err := swarmSpec(opt, homes)
	if err != nil {
		return nil, err
	}
	res, err := runSwarmNodes(ctx, opt, spec, homes, logw)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "dense AllReduce baseline: %d workers, %d steps\n", len(homes)-len(opt.Adversaries), opt.Rounds*res.H)
	if res.AllReduceEvalLoss, err = allReduceLoss(ctx, spec, honestPeers(opt, homes), opt.Rounds); err != nil {
		return nil, err
	}
	return res, nil
}

// runSwarmNodes runs the nodes until every honest one has scored opt.Rounds rounds, stops
// them, and measures the run.
func runSwarmNodes(ctx context.Context, opt SwarmOptions, spec *configs.Spec, homes []swarmHome, logw io.Writer) (_ *SwarmResult, err error) {
	links := newSwarmLinks(opt)
	check, err := links.check(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0, start := cpuTime(), time.Now()
	nodes, stop, err := startSwarm(ctx, opt, spec, homes, links.hook())
	defer func() {
		cancel()
		if serr := errors.Join(stop(), links.close()); serr != nil && err == nil {
			err = serr
		}
	}()
	if err != nil {
		return nil, err
	}
	honest := func(i int) bool { return adversaryOf(opt, i) == "" }
	if err := awaitRounds(ctx, opt, nodes, start, func() (p2p.WireSnapshot, int) { return links.sum(honest) }, logw); err != nil {
		return nil, err
	}
	wall, cpu := time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
	settleRoots(ctx, opt, nodes, logw)
	res := &SwarmResult{Task: opt.Task, Nodes: opt.Nodes, Rounds: opt.Rounds, H: spec.Training.InnerSteps, ComputeSlots: opt.ComputeSlots,
		Batch: spec.Training.BatchSize, Transport: links.describe(), LinkCheck: check, CPUSeconds: cpu,
		Aggregation: aggregationName(spec.Training.Aggregation), Merge: spec.Training.Outer.Merge,
		Wire: links.breakdown(honest, opt.Rounds)}
	final := make([]swarmNode, len(nodes))
	var verify float64
	for i, n := range nodes {
		st := n.Status().Training
		final[i] = swarmNode{peer: homes[i].id, adversary: adversaryOf(opt, i), st: st}
		verify += st.VerifyCPUS
		res.PeakRSSBytes = max(res.PeakRSSBytes, st.PeakRSSBytes)
	}
	if cpu > 0 {
		res.VerifyShare = verify / cpu
	}
	fillSwarm(res, final, wall)
	keepStatuses(ctx, final, nodes)
	return res, nil
}

// keepStatuses writes, with LOWBAND_BENCH_LOG_DIR set, every node's training status at
// the end of the run to statuses.json there, beside the nodes' logs, and each node's
// Prometheus metrics (its GET /metrics) to PEER.metrics: every figure of the result comes
// from the statuses, and other questions (what the validators ignored, and why) can be
// asked of both after the run.
func keepStatuses(ctx context.Context, final []swarmNode, nodes []*node.Node) {
	dir := os.Getenv("LOWBAND_BENCH_LOG_DIR")
	if dir == "" {
		return
	}
	out := make(map[string]*node.TrainingStatus, len(final))
	for _, n := range final {
		out[n.peer] = n.st
	}
	if b, err := json.Marshal(out); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "statuses.json"), b, 0o644)
	}
	for i, n := range nodes {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.APIAddr()+"/metrics", nil)
		if err != nil {
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err == nil {
			_ = os.WriteFile(filepath.Join(dir, final[i].peer+".metrics"), b, 0o644)
		}
	}
}

// aggregationName is a rule's name, with its trim for trimmed_mean.
func aggregationName(a configs.AggregationSpec) string {
	if a.Method == "trimmed_mean" {
		return fmt.Sprintf("%s %g", a.Method, a.Trim)
	}
	return a.Method
}

// adversaryOf is node i's adversary mode ("" for an honest node).
func adversaryOf(opt SwarmOptions, i int) string {
	if i < len(opt.Adversaries) {
		return opt.Adversaries[i]
	}
	return ""
}

// swarmHomes makes the training nodes' homes (local profile) and reads their peer IDs.
func swarmHomes(opt SwarmOptions) ([]swarmHome, error) {
	out := make([]swarmHome, opt.Nodes)
	for i := range out {
		h, cfg, err := newSwarmHome(filepath.Join(opt.Dir, fmt.Sprintf("node%d", i)))
		if err != nil {
			return nil, err
		}
		key, err := h.LoadIdentity()
		if err != nil {
			return nil, err
		}
		id, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return nil, err
		}
		out[i] = swarmHome{home: h, cfg: cfg, id: id.String()}
	}
	return out, nil
}

// newSwarmHome initialises a home in dir with the local profile and the devnet spec.
func newSwarmHome(dir string) (configs.Home, *configs.Config, error) {
	h := configs.Home{Dir: dir}
	if err := h.Init(configs.InitOptions{Profile: configs.ProfileLocal, Spec: configs.DevnetSpec}); err != nil {
		return h, nil, err
	}
	cfg, _, err := h.Load()
	return h, cfg, err
}

// swarmSpec is the run's network spec: the devnet's (simulated attestation), the task's
// default recipe with the asked H, batch and aggregation, equal genesis stakes for the training nodes,
// genesis now, and adversaries allowed when any node runs one.
func swarmSpec(opt SwarmOptions, homes []swarmHome) (*configs.Spec, error) {
	s, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		return nil, err
	}
	s.Name, s.Bootstrap = "bench-swarm", nil
	s.Training = configs.DefaultTrainingSpecFor(opt.Task)
	if opt.InnerSteps > 0 {
		s.Training.InnerSteps = opt.InnerSteps
	}
	if opt.Batch > 0 {
		s.Training.BatchSize = opt.Batch
	}
	if opt.Aggregation.Method != "" {
		s.Training.Aggregation = opt.Aggregation
	}
	if opt.Merge != nil {
		s.Training.Outer.Merge = *opt.Merge
	}
	s.Incentives.Stakes = make(map[string]uint64, len(homes))
	for _, h := range homes {
		s.Incentives.Stakes[h.id] = max(s.Incentives.MinStake, 100)
	}
	s.Time.GenesisTime = time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	s.Round.DeadlineMin, s.Round.DeadlineMax = opt.DeadlineMin, opt.DeadlineMax
	s.Testing.AllowAdversaries = len(opt.Adversaries) > 0
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("bench swarm: the generated spec: %w", err)
	}
	return s, nil
}

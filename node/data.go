package node

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/training"
)

// Sizes of the node's data.
const (
	// evalSamples is the size of the held-out batch every node evaluates θ on.
	evalSamples = 512
	// maxCorpusBytes bounds the charlm text a node reads.
	maxCorpusBytes = 64 << 20
	// heldOutFraction is the tail of the charlm text kept out of training.
	heldOutFraction = 0.1
	// syntheticSamples is the synthetic task's training set size.
	syntheticSamples = 4096
)

// ErrNoData reports training data that is missing where the node looks for it.
var ErrNoData = errors.New("training data not found")

// taskData is what the node trains and evaluates on: the task's training set, the samples
// of it in this node's slice, and the held-out batch. The held-out batch is a function of
// the spec alone, so every node scores θ on the same samples.
type taskData struct {
	train training.Dataset
	slice []int
	eval  training.Batch
}

// loadData loads the spec's task data from path (empty: the task's default), and this
// node's slice of it (Params.Slice of the node's canonical peer ID).
func loadData(p *Params, path, self string) (*taskData, error) {
	var d *taskData
	var err error
	switch p.Training.Task {
	case configs.TaskCharLM:
		d, err = loadCharLM(p, path)
	case configs.TaskFMNIST:
		d, err = loadFMNIST(path)
	case configs.TaskSynthetic:
		d, err = loadSynthetic(p.Training.Seed)
	default:
		err = fmt.Errorf("unknown task %q", p.Training.Task)
	}
	if err != nil {
		return nil, err
	}
	if d.slice, err = p.Slice(self, d.train.Len()); err != nil {
		return nil, err
	}
	return d, nil
}

func loadCharLM(p *Params, path string) (*taskData, error) {
	if path == "" {
		path = configs.DefaultCorpus()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: charlm corpus: %w (set training.data in config.toml to a text file)", ErrNoData, err)
	}
	defer f.Close()
	c, err := training.NewByteCorpus(f, maxCorpusBytes)
	if err != nil {
		return nil, fmt.Errorf("charlm corpus %s: %w", path, err)
	}
	train, held, err := c.Windows(p.Training.Context, heldOutFraction)
	if err != nil {
		return nil, fmt.Errorf("charlm corpus %s: %w", path, err)
	}
	return &taskData{train: train, eval: held.Batch(evalIndex(held.Len(), p.Training.Seed))}, nil
}

func loadFMNIST(dir string) (*taskData, error) {
	if dir == "" {
		dir = configs.DefaultFMNISTDir
	}
	train, err := LoadFMNIST(dir, "train")
	if err != nil {
		return nil, fmt.Errorf("%w (install dataset-fashion-mnist or set training.data)", err)
	}
	test, err := LoadFMNIST(dir, "t10k")
	if err != nil {
		return nil, err
	}
	return &taskData{train: train, eval: test.Batch(evalIndex(test.Len(), 0))}, nil
}

// LoadFMNIST reads one split ("train" or "t10k") of Fashion-MNIST from the directory of its
// gzipped IDX files. A missing file is ErrNoData.
func LoadFMNIST(dir, split string) (*training.ImageData, error) {
	im, err := os.Open(filepath.Join(dir, split+"-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, fmt.Errorf("%w: fmnist: %w", ErrNoData, err)
	}
	defer im.Close()
	lb, err := os.Open(filepath.Join(dir, split+"-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, fmt.Errorf("%w: fmnist: %w", ErrNoData, err)
	}
	defer lb.Close()
	return training.NewImageData(im, lb, FMNISTClasses)
}

// loadSynthetic draws the synthetic task from the spec's seed: syntheticSamples to train
// on, then evalSamples held out.
func loadSynthetic(seed uint64) (*taskData, error) {
	all, err := training.NewSynthetic(syntheticSamples+evalSamples, SyntheticDim, SyntheticClasses, seed)
	if err != nil {
		return nil, err
	}
	return &taskData{
		train: prefix{all, syntheticSamples},
		eval:  all.Batch(training.Range(syntheticSamples, syntheticSamples+evalSamples)),
	}, nil
}

// prefix is the first n samples of a data set.
type prefix struct {
	training.Dataset
	n int
}

func (p prefix) Len() int { return p.n }

// evalIndex picks evalSamples of total samples (all when there are fewer), sorted, as a
// function of total and seed.
func evalIndex(total int, seed uint64) []int {
	if total <= evalSamples {
		return training.Range(0, total)
	}
	idx := rand.New(rand.NewPCG(seed, 0x6576616c)).Perm(total)[:evalSamples]
	slices.Sort(idx)
	return idx
}
